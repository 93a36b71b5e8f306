"""minigrad.nn: modules, layers and initialisers. `import nn` and `from minigrad import nn` are
the same package."""

from . import init
from .module import Module, ModuleList, Parameter, Sequential
