"""Two small convolutional networks written the way PyTorch users write them, each source run
twice: with `torch` and with minigrad in its place. A LeNet-style image classifier (Conv2d,
BatchNorm2d, ReLU, MaxPool2d, AdaptiveAvgPool2d, Flatten, Linear; SGD with momentum and a
StepLR schedule) and a TextCNN for sentiment (Embedding, Conv1d of several widths, max over
time, dropout, Linear; Adam). Started from the same weights, the two frameworks must give the
same losses step by step and the same weights after training."""

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")


def image_classifier(torch):
    nn = torch.nn

    class LeNet(nn.Module):
        def __init__(self, classes=3):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 6, kernel_size=3, padding=1),
                nn.BatchNorm2d(6),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(6, 12, kernel_size=3, padding="same"),
                nn.ReLU(),
                nn.AdaptiveAvgPool2d((2, 2)),
            )
            self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(12 * 2 * 2, classes))

        def forward(self, images):
            return self.classifier(self.features(images))

    return LeNet()


def text_classifier(torch, F):
    nn = torch.nn

    class TextCNN(nn.Module):
        def __init__(self, vocab_size=30, dim=8, widths=(2, 3, 4), channels=5):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, dim, padding_idx=0)
            self.convs = nn.ModuleList([nn.Conv1d(dim, channels, width) for width in widths])
            self.dropout = nn.Dropout(0.0)
            self.fc = nn.Linear(channels * len(widths), 2)

        def forward(self, ids):
            x = self.embedding(ids).transpose(1, 2)  # (B, dim, T): channels first for Conv1d
            pooled = [F.relu(conv(x)).max(dim=2).values for conv in self.convs]
            return self.fc(self.dropout(torch.cat(pooled, dim=1)))

    return TextCNN()


def _twins(build):
    ours, theirs = build(mg), build(torch)
    state = ours.state_dict()
    assert list(state) == list(theirs.state_dict())
    theirs.load_state_dict(
        {name: torch.from_numpy(value.numpy().copy()) for name, value in state.items()}
    )
    return ours, theirs


def _train_images(torch, model, images, labels):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    losses = []
    model.train()
    for _ in range(8):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
    model.eval()
    return losses, model(images).argmax(dim=1)


def _train_text(torch, model, ids, labels):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(8):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(ids), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses, None


def _assert_same_training(ours, theirs, train, our_inputs, their_inputs):
    our_losses, our_predictions = train(mg, ours, *our_inputs)
    their_losses, their_predictions = train(torch, theirs, *their_inputs)
    np.testing.assert_allclose(our_losses, their_losses, rtol=2e-5)
    assert their_losses[-1] < their_losses[0] - 0.05  # it learned something, in both
    if our_predictions is not None:
        np.testing.assert_array_equal(our_predictions.numpy(), their_predictions.numpy())
    trained = theirs.state_dict()
    for name, value in ours.state_dict().items():  # BatchNorm's running statistics included
        np.testing.assert_allclose(
            value.numpy(), trained[name].numpy(), rtol=1e-4, atol=2e-5, err_msg=name
        )


def test_the_same_image_classifier_source_trains_alike_under_minigrad_and_torch():
    mg.manual_seed(0)
    ours, theirs = _twins(image_classifier)
    rng = np.random.default_rng(1)
    images = rng.standard_normal((6, 1, 10, 10)).astype(np.float32)
    labels = rng.integers(0, 3, 6)
    _assert_same_training(
        ours,
        theirs,
        _train_images,
        (mg.tensor(images), mg.tensor(labels)),
        (torch.from_numpy(images), torch.from_numpy(labels)),
    )


def test_the_same_text_cnn_source_trains_alike_under_minigrad_and_torch():
    import minigrad.nn.functional as mg_functional
    import torch.nn.functional as torch_functional

    mg.manual_seed(0)
    ours, theirs = _twins(
        lambda library: text_classifier(
            library, mg_functional if library is mg else torch_functional
        )
    )
    rng = np.random.default_rng(2)
    ids = rng.integers(0, 30, (6, 12))
    ids[:, 9:] = 0  # padding at the ends
    labels = rng.integers(0, 2, 6)
    _assert_same_training(
        ours,
        theirs,
        _train_text,
        (mg.tensor(ids), mg.tensor(labels)),
        (torch.from_numpy(ids), torch.from_numpy(labels)),
    )
