"""A DCGAN trained a few steps the way pytorch/examples' dcgan trains one, one source run with
`torch` and with minigrad in its place.

The program: a Generator of ConvTranspose2d, BatchNorm2d, ReLU and Tanh and a Discriminator of
Conv2d, LeakyReLU(0.2, inplace=True), BatchNorm2d and Sigmoid, each forward asking
`input.is_cuda` before it would spread over GPUs; weights_init by class name; BCELoss; one Adam
per network with betas (0.5, 0.999); real images from a DataLoader, labels made by torch.full
and refilled with fill_. Each step updates D on a real batch and on the fake batch detached from
G, then G through D with the real label. From the same weights, images and noise (drawn by numpy,
as both frameworks' generators differ), in float64, the two frameworks give the same losses and
D outputs step by step and the same weights and batch statistics after.
"""

import numpy as np
import pytest
from parity import assert_close, assert_same_parameter_grads, copy_state_to_torch

import minigrad as mg

torch = pytest.importorskip("torch")

NC, NZ, NGF, NDF = 1, 4, 4, 4  # channels of an image, noise size, generator and critic widths


def dcgan(torch):
    nn = torch.nn

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find("Conv") != -1:
            nn.init.normal_(m.weight, 0.0, 0.02)
        elif classname.find("BatchNorm") != -1:
            nn.init.normal_(m.weight, 1.0, 0.02)
            nn.init.zeros_(m.bias)

    class Generator(nn.Module):
        """(B, NZ, 1, 1) noise -> (B, NC, 8, 8) images in [-1, 1]."""

        def __init__(self, ngpu=1):
            super().__init__()
            self.ngpu = ngpu
            self.main = nn.Sequential(
                nn.ConvTranspose2d(NZ, NGF * 2, 4, 1, 0, bias=False),  # 4 x 4
                nn.BatchNorm2d(NGF * 2),
                nn.ReLU(True),
                nn.ConvTranspose2d(NGF * 2, NC, 4, 2, 1, bias=False),  # 8 x 8
                nn.Tanh(),
            )

        def forward(self, input):
            if input.is_cuda and self.ngpu > 1:
                return nn.parallel.data_parallel(self.main, input, range(self.ngpu))
            return self.main(input)

    class Discriminator(nn.Module):
        """(B, NC, 8, 8) images -> (B,) probabilities of being real."""

        def __init__(self, ngpu=1):
            super().__init__()
            self.ngpu = ngpu
            self.main = nn.Sequential(
                nn.Conv2d(NC, NDF, 4, 2, 1, bias=False),  # 4 x 4
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(NDF, NDF * 2, 4, 2, 1, bias=False),  # 2 x 2
                nn.BatchNorm2d(NDF * 2),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(NDF * 2, 1, 2, 1, 0, bias=False),
                nn.Sigmoid(),
            )

        def forward(self, input):
            if input.is_cuda and self.ngpu > 1:
                output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
            else:
                output = self.main(input)
            return output.view(-1, 1).squeeze(1)

    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    return netG.double(), netD.double()


def train(torch, netG, netD, images, noises, lr=2e-3):
    """dcgan's loop over a DataLoader of images; noises[i] is step i's noise -> a dict of each
    step's errD, errG, D(x), D(G(z)) before and after D's update."""
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    dataloader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(images)), batch_size=4, shuffle=False
    )
    criterion = torch.nn.BCELoss()
    real_label, fake_label = 1.0, 0.0
    optimizerD = torch.optim.Adam(netD.parameters(), lr=lr, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=lr, betas=(0.5, 0.999))
    history = {key: [] for key in ("errD", "errG", "D_x", "D_G_z1", "D_G_z2")}
    for epoch in range(2):
        for i, data in enumerate(dataloader):
            # (1) update D: maximize log(D(x)) + log(1 - D(G(z)))
            netD.zero_grad()
            real_cpu = data[0].to(device)
            batch_size = real_cpu.size(0)
            label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)
            output = netD(real_cpu)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            noise = torch.from_numpy(noises[epoch * len(dataloader) + i]).to(device)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach())  # D's step must not reach into G
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()

            # (2) update G: maximize log(D(G(z)))
            netG.zero_grad()
            label.fill_(real_label)  # fake labels are real for the generator's cost
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()
            for key, value in zip(history, (errD.item(), errG.item(), D_x, D_G_z1, D_G_z2)):
                history[key].append(value)
    return history


def test_the_same_dcgan_source_trains_alike():
    mg.manual_seed(0)
    ourG, ourD = dcgan(mg)
    theirG, theirD = dcgan(torch)
    copy_state_to_torch(ourG, theirG, np.float64)
    copy_state_to_torch(ourD, theirD, np.float64)
    rng = np.random.default_rng(0)
    images = np.tanh(rng.standard_normal((12, NC, 8, 8)) + np.linspace(-1, 1, 8))  # 3 batches
    noises = [rng.standard_normal((4, NZ, 1, 1)) for _ in range(6)]

    ours = train(mg, ourG, ourD, images, noises)
    theirs = train(torch, theirG, theirD, images, noises)
    assert len(theirs["errD"]) == 6
    for key, values in theirs.items():
        assert_close(np.array(ours[key]), np.array(values), 1e-9, key)
    # D learned to tell the two apart: it rates real images higher, and each of its steps
    # lowered its rating of the fake batch it was shown
    assert theirs["errD"][-1] < theirs["errD"][0] - 0.05
    assert theirs["D_x"][-1] > theirs["D_x"][0] + 0.05
    assert all(after < before for before, after in zip(theirs["D_G_z1"], theirs["D_G_z2"]))

    # the last step's gradients, then the weights and running statistics after training
    assert_same_parameter_grads(ourG, theirG, 1e-9)
    assert_same_parameter_grads(ourD, theirD, 1e-9)
    for ours_net, theirs_net in ((ourG, theirG), (ourD, theirD)):
        their_state = theirs_net.state_dict()
        for name, value in ours_net.state_dict().items():
            assert_close(value, their_state[name], 1e-9, name)
