#!/usr/bin/python3
"""Exports PyTorch models to ONNX for the importer's tests and benchmark.

Run with Debian's interpreter (it sees python3-torch, python3-torchvision and
python3-onnx):

    /usr/bin/python3 scripts/export-torch-fixtures.py [output-dir]
    /usr/bin/python3 scripts/export-torch-fixtures.py --resnet18 PATH
    /usr/bin/python3 scripts/export-torch-fixtures.py --vision OUT_DIR

The first form writes torch-ctr.onnx, torch-mlp.onnx, torch-cnn.onnx,
torch-ctr-loss.onnx (the CTR model with its loss in the graph),
torch-lenet.onnx (LeNet-5 with F.avg_pool2d), torch-din.onnx (DIN's
target attention), torch-two-tower.onnx (F.normalize),
torch-einsum.onnx (attention written with torch.einsum),
torch-transformer.onnx (a classifier on nn.TransformerEncoderLayer) and
the CTR and text families of FAMILIES (torch-wide-deep.onnx,
torch-deepfm.onnx, torch-dcn-v2.onnx, torch-autoint.onnx,
torch-dlrm-dot.onnx, torch-textcnn.onnx, torch-embedding-bag.onnx,
torch-embedding-bag-offsets.onnx, torch-gru-sequence.onnx,
torch-bilstm-text.onnx) (default: test/Import/ONNX/Inputs/, where they are committed). The second
writes torchvision's resnet18 (random weights, about 45 MB), which is not
committed: bench/import/run.sh exports it into the build directory. The
third writes torch-mobilenet-v2.onnx and torch-resnet18.onnx exported for
training (see VISION), which the tests export into their scratch
directories.

Every model is exported in eval mode at opset 13 with a dynamic batch axis
(`dynamic_axes`) and constant folding, so the shape arithmetic that tracing
records folds away in the exporter rather than reaching the importer. Weights
come from torch.manual_seed, so a rerun with the same torch version reproduces
the files.
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

OPSET = 13
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "test", "Import", "ONNX", "Inputs")

NUM_SLOTS = 8
VOCAB = 100
EMB_DIM = 8
NUM_DENSE = 13


class CTR(nn.Module):
    """DLRM-like: one embedding table per sparse slot, a bottom MLP over the
    dense features, the concatenation, a top MLP and a sigmoid."""

    def __init__(self):
        super().__init__()
        self.emb = nn.ModuleList(
            nn.Embedding(VOCAB, EMB_DIM) for _ in range(NUM_SLOTS))
        self.bottom = nn.Sequential(
            nn.Linear(NUM_DENSE, 16), nn.ReLU(), nn.Linear(16, EMB_DIM),
            nn.ReLU())
        self.top = nn.Sequential(
            nn.Linear(EMB_DIM * (NUM_SLOTS + 1), 32), nn.ReLU(),
            nn.Linear(32, 1))

    def forward(self, dense, sparse):
        # sparse[:, i] traces to Gather(axis=1) of the int64 input, so each
        # table is looked up by ids computed from the graph input.
        looked_up = [e(sparse[:, i]) for i, e in enumerate(self.emb)]
        x = torch.cat(looked_up + [self.bottom(dense)], dim=1)
        return torch.sigmoid(self.top(x))


class CTRWithLoss(CTR):
    """The CTR model with its loss spelled out in the graph, as users write
    it for torch versions whose exporter has no binary_cross_entropy: the
    label is an input, the 0-D mean loss a second output."""

    def forward(self, dense, sparse, label):
        p = super().forward(dense, sparse)
        loss = -(label * torch.log(p) + (1 - label) * torch.log(1 - p)).mean()
        return p, loss


class LeNet(nn.Module):
    """LeNet-5 as tutorials write it, with F.avg_pool2d: the exporter puts an
    all-zero Pad before each AveragePool."""

    def __init__(self):
        super().__init__()
        # LeNet-5's layers at small widths (the fixture stays small).
        self.conv1 = nn.Conv2d(1, 4, 5, padding=2)
        self.conv2 = nn.Conv2d(4, 8, 5)
        self.fc1 = nn.Linear(8 * 5 * 5, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.avg_pool2d(torch.relu(self.conv1(x)), 2)
        x = F.avg_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class TargetAttention(nn.Module):
    """DIN's target attention over a behaviour sequence: the query is
    expanded along the sequence (`q.unsqueeze(1).expand(-1, L, -1)`), which
    the exporter spells as Shape, ConstantOfShape, Equal and Where."""

    def __init__(self):
        super().__init__()
        self.score = nn.Linear(EMB_DIM, 1)

    def forward(self, query, history):
        length = history.shape[1]
        q = query.unsqueeze(1).expand(-1, length, -1)
        weights = torch.softmax(self.score(q * history).squeeze(-1), dim=1)
        return (weights.unsqueeze(-1) * history).sum(1)


class TwoTower(nn.Module):
    """A two-tower retrieval model: user and item towers over their
    embeddings, L2-normalised (F.normalize exports ReduceL2, Clip and an
    Expand to the batch), scored by a scaled cosine."""

    def __init__(self):
        super().__init__()
        self.user = nn.Embedding(VOCAB, EMB_DIM)
        self.item = nn.Embedding(VOCAB, EMB_DIM)
        self.user_tower = nn.Linear(EMB_DIM, EMB_DIM)
        self.item_tower = nn.Linear(EMB_DIM, EMB_DIM)

    def forward(self, user, item):
        u = F.normalize(self.user_tower(self.user(user)), dim=1)
        v = F.normalize(self.item_tower(self.item(item)), dim=1)
        return torch.sigmoid(5 * (u * v).sum(1, keepdim=True))


class EinsumAttention(nn.Module):
    """Attention pooling written with torch.einsum (exported as Einsum
    nodes): a projected query scores each step of a behaviour sequence
    ("bd,bld->bl"), and the softmax weights pool the sequence
    ("bl,bld->bd")."""

    def __init__(self):
        super().__init__()
        self.project = nn.Linear(EMB_DIM, EMB_DIM)
        self.out = nn.Linear(EMB_DIM, 1)

    def forward(self, query, history):
        scores = torch.einsum("bd,bld->bl", self.project(query), history)
        weights = torch.softmax(scores, dim=1)
        pooled = torch.einsum("bl,bld->bd", weights, history)
        return torch.sigmoid(self.out(pooled))


SEQ_LEN = 6
TX_DIM = 16
TX_HEADS = 2


class TransformerClassifier(nn.Module):
    """A sequence classifier on one nn.TransformerEncoderLayer: token
    embeddings plus a learned position embedding, multi-head self-attention
    ([T, B, E] -> [T, B*H, E/H] and back, the batch merged with the heads),
    the feed-forward block, mean pooling and a sigmoid. batch_first=False
    keeps torch 1.13 off its fused encoder kernel, which has no ONNX
    export; dropout is 0 so that training equals the traced graph."""

    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, TX_DIM)
        self.position = nn.Parameter(torch.randn(SEQ_LEN, TX_DIM) * 0.1)
        self.encoder = nn.TransformerEncoderLayer(
            TX_DIM, TX_HEADS, dim_feedforward=2 * TX_DIM, dropout=0.0)
        self.out = nn.Linear(TX_DIM, 1)

    def forward(self, tokens):
        x = self.tokens(tokens) + self.position
        x = self.encoder(x.transpose(0, 1)).transpose(0, 1)
        return torch.sigmoid(self.out(x.mean(dim=1)))


class WideDeep(nn.Module):
    """Wide & Deep: a wide part (one-dimensional embeddings per slot, summed,
    and a linear term of the dense features) added to a deep MLP over the
    dense features and the slot embeddings."""

    def __init__(self):
        super().__init__()
        self.emb = nn.ModuleList(
            nn.Embedding(VOCAB, EMB_DIM) for _ in range(NUM_SLOTS))
        self.wide = nn.ModuleList(
            nn.Embedding(VOCAB, 1) for _ in range(NUM_SLOTS))
        self.wide_dense = nn.Linear(NUM_DENSE, 1)
        self.deep = nn.Sequential(
            nn.Linear(NUM_DENSE + NUM_SLOTS * EMB_DIM, 32), nn.ReLU(),
            nn.Linear(32, 1))

    def forward(self, dense, sparse):
        deep = torch.cat([dense] + [e(sparse[:, i])
                                    for i, e in enumerate(self.emb)], dim=1)
        wide = self.wide_dense(dense)
        for i, e in enumerate(self.wide):
            wide = wide + e(sparse[:, i])
        return torch.sigmoid(self.deep(deep) + wide)


class DeepFM(nn.Module):
    """DeepFM: first-order terms, the factorization machine's pairwise
    interactions 0.5 * ((sum v)^2 - sum v^2) over the stacked slot
    embeddings, and a deep MLP over them."""

    def __init__(self):
        super().__init__()
        self.emb = nn.ModuleList(
            nn.Embedding(VOCAB, EMB_DIM) for _ in range(NUM_SLOTS))
        self.first = nn.ModuleList(
            nn.Embedding(VOCAB, 1) for _ in range(NUM_SLOTS))
        self.deep = nn.Sequential(
            nn.Linear(NUM_SLOTS * EMB_DIM, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, sparse):
        v = torch.stack([e(sparse[:, i]) for i, e in enumerate(self.emb)], 1)
        fm = 0.5 * (v.sum(1) ** 2 - (v ** 2).sum(1)).sum(1, keepdim=True)
        first = self.first[0](sparse[:, 0])
        for i in range(1, NUM_SLOTS):
            first = first + self.first[i](sparse[:, i])
        return torch.sigmoid(first + fm + self.deep(v.flatten(1)))


class DCNv2(nn.Module):
    """DCN-v2: two full-rank cross layers x0 * W x + x next to a deep MLP,
    concatenated into the output layer."""

    def __init__(self):
        super().__init__()
        self.emb = nn.ModuleList(
            nn.Embedding(VOCAB, EMB_DIM) for _ in range(NUM_SLOTS))
        width = NUM_DENSE + NUM_SLOTS * EMB_DIM
        self.cross = nn.ModuleList(nn.Linear(width, width) for _ in range(2))
        self.deep = nn.Sequential(nn.Linear(width, 32), nn.ReLU())
        self.out = nn.Linear(width + 32, 1)

    def forward(self, dense, sparse):
        x0 = torch.cat([dense] + [e(sparse[:, i])
                                  for i, e in enumerate(self.emb)], dim=1)
        x = x0
        for layer in self.cross:
            x = x0 * layer(x) + x
        return torch.sigmoid(self.out(torch.cat([x, self.deep(x0)], dim=1)))


class AutoInt(nn.Module):
    """AutoInt: multi-head self-attention across the slot embeddings
    (nn.MultiheadAttention over [slots, batch, dim], the batch merged with
    the heads inside), a residual projection, ReLU and a linear output."""

    def __init__(self):
        super().__init__()
        self.emb = nn.ModuleList(
            nn.Embedding(VOCAB, EMB_DIM) for _ in range(NUM_SLOTS))
        self.attention = nn.MultiheadAttention(EMB_DIM, 2)
        self.residual = nn.Linear(EMB_DIM, EMB_DIM, bias=False)
        self.out = nn.Linear(NUM_SLOTS * EMB_DIM, 1)

    def forward(self, sparse):
        v = torch.stack([e(sparse[:, i]) for i, e in enumerate(self.emb)], 0)
        a, _ = self.attention(v, v, v, need_weights=False)
        h = F.relu(a + self.residual(v)).transpose(0, 1).flatten(1)
        return torch.sigmoid(self.out(h))


class DLRMDot(nn.Module):
    """DLRM with the dot interaction: the bottom MLP's output and the slot
    embeddings stacked, their pairwise dot products by a batched matmul,
    the strictly lower triangle kept with constant indices Z[:, li, lj]."""

    def __init__(self):
        super().__init__()
        self.emb = nn.ModuleList(
            nn.Embedding(VOCAB, EMB_DIM) for _ in range(NUM_SLOTS))
        self.bottom = nn.Sequential(
            nn.Linear(NUM_DENSE, 16), nn.ReLU(), nn.Linear(16, EMB_DIM),
            nn.ReLU())
        n = NUM_SLOTS + 1
        li, lj = torch.tril_indices(n, n, offset=-1)
        self.register_buffer("li", li, persistent=False)
        self.register_buffer("lj", lj, persistent=False)
        self.top = nn.Sequential(
            nn.Linear(EMB_DIM + n * (n - 1) // 2, 16), nn.ReLU(),
            nn.Linear(16, 1))

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        t = torch.stack([x] + [e(sparse[:, i])
                               for i, e in enumerate(self.emb)], dim=1)
        z = torch.bmm(t, t.transpose(1, 2))
        return torch.sigmoid(self.top(torch.cat([x, z[:, self.li, self.lj]],
                                                dim=1)))


BAG_LEN = 5


class EmbeddingBagCTR(nn.Module):
    """A CTR model on nn.EmbeddingBag: three multi-hot features of BAG_LEN
    ids each (the rows of a [batch, 3, BAG_LEN] input), pooled by sum, mean
    and max, next to the dense features. torch exports each bag as a Loop
    over the flattened ids between offsets."""

    def __init__(self):
        super().__init__()
        self.bags = nn.ModuleList(
            nn.EmbeddingBag(VOCAB, EMB_DIM, mode=mode)
            for mode in ("sum", "mean", "max"))
        self.top = nn.Sequential(
            nn.Linear(NUM_DENSE + 3 * EMB_DIM, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, dense, history):
        pooled = [bag(history[:, i]) for i, bag in enumerate(self.bags)]
        return torch.sigmoid(self.top(torch.cat([dense] + pooled, dim=1)))


class EmbeddingBagOffsetsCTR(nn.Module):
    """A CTR model on nn.EmbeddingBag with offsets: each example's bag of
    history ids has its own length (none, too), the ids of the batch's bags
    concatenated in `ids` and where each bag starts in `offsets`. Three
    tables pool the same bags by sum, mean and max, next to the dense
    features."""

    # Inputs whose dimension 0 is not the batch.
    RAGGED = ("ids",)

    def __init__(self):
        super().__init__()
        self.bags = nn.ModuleList(
            nn.EmbeddingBag(VOCAB, EMB_DIM, mode=mode)
            for mode in ("sum", "mean", "max"))
        self.top = nn.Sequential(
            nn.Linear(NUM_DENSE + 3 * EMB_DIM, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, dense, ids, offsets):
        pooled = [bag(ids, offsets) for bag in self.bags]
        return torch.sigmoid(self.top(torch.cat([dense] + pooled, dim=1)))


TEXT_LEN = 12


class TextCNN(nn.Module):
    """TextCNN: token embeddings, Conv1d of widths 2, 3 and 4, ReLU, max
    over time, concatenation and a linear output."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMB_DIM)
        self.convs = nn.ModuleList(
            nn.Conv1d(EMB_DIM, 6, width) for width in (2, 3, 4))
        self.out = nn.Linear(18, 1)

    def forward(self, tokens):
        x = self.emb(tokens).transpose(1, 2)
        h = torch.cat([F.relu(c(x)).max(dim=2)[0] for c in self.convs], 1)
        return torch.sigmoid(self.out(h))


HISTORY_LEN = 10


class GRUSequenceCTR(nn.Module):
    """A sequence CTR model (GRU4Rec / DIEN's interest extractor): the
    user's last HISTORY_LEN items embedded and run through an nn.GRU
    (batch first); its last state and its mean over time join the target
    item's embedding and the dense features under an MLP. torch exports the
    GRU with linear_before_reset = 1, its zero initial state as a
    ConstantOfShape of the batch's shape, and (without constant folding) the
    weights reordered from r, z, n to ONNX's z, r, n by Slice and Concat."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMB_DIM)
        self.gru = nn.GRU(EMB_DIM, 16, batch_first=True)
        self.top = nn.Sequential(
            nn.Linear(NUM_DENSE + EMB_DIM + 32, 16), nn.ReLU(),
            nn.Linear(16, 1))

    def forward(self, dense, target, history):
        seq, last = self.gru(self.emb(history))
        x = torch.cat([dense, self.emb(target), last[-1], seq.mean(dim=1)],
                      dim=1)
        return torch.sigmoid(self.top(x))


class BiLSTMText(nn.Module):
    """A text classifier on a bidirectional nn.LSTM: token embeddings, the
    final states of both directions concatenated, a linear output."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMB_DIM)
        self.lstm = nn.LSTM(EMB_DIM, 12, batch_first=True,
                            bidirectional=True)
        self.out = nn.Linear(24, 1)

    def forward(self, tokens):
        _, (h, _) = self.lstm(self.emb(tokens))
        return torch.sigmoid(self.out(torch.cat([h[0], h[1]], dim=1)))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32), nn.Tanh(),
            nn.Linear(32, 10))

    def forward(self, x):
        return torch.softmax(self.net(x), dim=1)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1),
            nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        # In eval mode the exporter folds a BatchNorm that follows a Conv
        # into the Conv's weights; this one follows no Conv, so it stays a
        # BatchNormalization node.
        self.norm = nn.BatchNorm1d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(self.norm(torch.flatten(self.features(x), 1)))


def export(model, args, input_names, path, output_names=("output",),
           fold=True, ragged=()):
    model.eval()
    # Outputs after the first (a 0-D loss) have no batch axis; the inputs in
    # `ragged` have a dynamic dimension 0 of their own.
    dynamic = {name: {0: "ids" if name in ragged else "batch"}
               for name in input_names + [output_names[0]]}
    with torch.no_grad():
        torch.onnx.export(model, args, path, input_names=input_names,
                          output_names=list(output_names),
                          dynamic_axes=dynamic, opset_version=OPSET,
                          do_constant_folding=fold)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def export_fixtures(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(20240601)
    batch = 4
    ctr = CTR()
    export(ctr, (torch.randn(batch, NUM_DENSE),
                 torch.randint(0, VOCAB, (batch, NUM_SLOTS))),
           ["dense", "sparse"], os.path.join(out, "torch-ctr.onnx"))
    torch.manual_seed(20240602)
    export(MLP(), (torch.randn(batch, 32),), ["x"],
           os.path.join(out, "torch-mlp.onnx"))
    torch.manual_seed(20240603)
    cnn = CNN()
    # Non-trivial running statistics, as a trained model would have.
    for m in cnn.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    export(cnn, (torch.randn(batch, 3, 16, 16),), ["image"],
           os.path.join(out, "torch-cnn.onnx"))
    torch.manual_seed(20240605)
    export(CTRWithLoss(),
           (torch.randn(batch, NUM_DENSE),
            torch.randint(0, VOCAB, (batch, NUM_SLOTS)),
            torch.randint(0, 2, (batch, 1)).float()),
           ["dense", "sparse", "label"],
           os.path.join(out, "torch-ctr-loss.onnx"), ("output", "loss"))
    torch.manual_seed(20240606)
    export(LeNet(), (torch.randn(batch, 1, 28, 28),), ["image"],
           os.path.join(out, "torch-lenet.onnx"))
    torch.manual_seed(20240607)
    export(TargetAttention(),
           (torch.randn(batch, EMB_DIM), torch.randn(batch, 5, EMB_DIM)),
           ["query", "history"], os.path.join(out, "torch-din.onnx"))
    torch.manual_seed(20240608)
    export(TwoTower(),
           (torch.randint(0, VOCAB, (batch,)), torch.randint(0, VOCAB, (batch,))),
           ["user", "item"], os.path.join(out, "torch-two-tower.onnx"))
    torch.manual_seed(20240609)
    export(EinsumAttention(),
           (torch.randn(batch, EMB_DIM), torch.randn(batch, 5, EMB_DIM)),
           ["query", "history"], os.path.join(out, "torch-einsum.onnx"))
    torch.manual_seed(20240610)
    transformer = TransformerClassifier()
    # LayerNorm weights as training leaves them: the exporter merges
    # initializers of equal values (the fresh ones and zeros), which would
    # make the two norms share one parameter.
    for m in transformer.modules():
        if isinstance(m, nn.LayerNorm):
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)
    # Without constant folding the weights stay the module's parameters
    # (folding would store in_proj_weight's transposed slices instead).
    export(transformer, (torch.randint(0, VOCAB, (batch, SEQ_LEN)),),
           ["tokens"], os.path.join(out, "torch-transformer.onnx"),
           fold=False)
    export_families(out)


def ctr_batch(batch, gen):
    return {"dense": torch.randn(batch, NUM_DENSE, generator=gen),
            "sparse": torch.randint(0, VOCAB, (batch, NUM_SLOTS),
                                    generator=gen)}


def sparse_batch(batch, gen):
    return {"sparse": torch.randint(0, VOCAB, (batch, NUM_SLOTS),
                                    generator=gen)}


def bag_batch(batch, gen):
    return {"dense": torch.randn(batch, NUM_DENSE, generator=gen),
            "history": torch.randint(0, VOCAB, (batch, 3, BAG_LEN),
                                     generator=gen)}


def offsets_batch(batch, gen):
    """Bags of 0 to 2 * BAG_LEN ids, concatenated, with their starts."""
    lengths = torch.randint(0, 2 * BAG_LEN + 1, (batch,), generator=gen)
    offsets = torch.cumsum(lengths, 0) - lengths
    return {"dense": torch.randn(batch, NUM_DENSE, generator=gen),
            "ids": torch.randint(0, VOCAB, (int(lengths.sum()),),
                                 generator=gen),
            "offsets": offsets}


def sequence_batch(batch, gen):
    return {"dense": torch.randn(batch, NUM_DENSE, generator=gen),
            "target": torch.randint(0, VOCAB, (batch,), generator=gen),
            "history": torch.randint(0, VOCAB, (batch, HISTORY_LEN),
                                     generator=gen)}


def text_batch(batch, gen):
    return {"tokens": torch.randint(0, VOCAB, (batch, TEXT_LEN),
                                    generator=gen)}


# The model families a CTR or text user exports, each a binary classifier
# ending in a sigmoid (trained with bce): name -> (module class, a seeded
# batch of its inputs by name, constant folding at export). Modules with
# nn.MultiheadAttention, nn.GRU or nn.LSTM are exported without folding,
# which would store the weights' transposed or reordered slices instead of
# the parameters.
FAMILIES = {
    "wide-deep": (WideDeep, ctr_batch, True),
    "deepfm": (DeepFM, sparse_batch, True),
    "dcn-v2": (DCNv2, ctr_batch, True),
    "autoint": (AutoInt, sparse_batch, False),
    "dlrm-dot": (DLRMDot, ctr_batch, True),
    "textcnn": (TextCNN, text_batch, True),
    "embedding-bag": (EmbeddingBagCTR, bag_batch, True),
    "gru-sequence": (GRUSequenceCTR, sequence_batch, False),
    "bilstm-text": (BiLSTMText, text_batch, False),
    "embedding-bag-offsets": (EmbeddingBagOffsetsCTR, offsets_batch, True),
}


def export_families(out):
    for seed, (name, (cls, make_batch, fold)) in enumerate(FAMILIES.items()):
        torch.manual_seed(20240700 + seed)
        model = cls()
        inputs = make_batch(4, torch.Generator().manual_seed(seed))
        export(model, tuple(inputs.values()), list(inputs),
               os.path.join(out, f"torch-{name}.onnx"), fold=fold,
               ragged=getattr(cls, "RAGGED", ()))


def image_batch(batch, gen):
    return {"image": torch.randn(batch, 3, 32, 32, generator=gen)}


def mobilenet_v2():
    import torchvision

    model = torchvision.models.mobilenet_v2(weights=None, width_mult=0.25,
                                            num_classes=10)
    model.classifier[0].p = 0.0  # no dropout: a step equals the graph's
    return model


def resnet18():
    import torchvision

    return torchvision.models.resnet18(weights=None, num_classes=10)


# torchvision's models, too large to commit (mobilenet_v2 at width 0.25 is
# 1 MB, resnet18 45 MB): the tests export them with --vision into their
# scratch directory. They are exported for training (TrainingMode.TRAINING,
# opset 14): BatchNormalization with training_mode = 1 normalises with the
# batch's statistics, as torch's train() mode does, and no Conv+BN folding
# renames the weights. 10 classes, trained with softmax cross-entropy on
# 32x32 images.
VISION = {
    "mobilenet-v2": (mobilenet_v2, image_batch),
    "resnet18": (resnet18, image_batch),
}


def export_vision(out):
    os.makedirs(out, exist_ok=True)
    for seed, (name, (make_model, make_batch)) in enumerate(VISION.items()):
        torch.manual_seed(20240800 + seed)
        model = make_model()
        model.train()
        inputs = make_batch(2, torch.Generator().manual_seed(seed))
        path = os.path.join(out, f"torch-{name}.onnx")
        with torch.no_grad():
            torch.onnx.export(model, tuple(inputs.values()), path,
                              input_names=list(inputs),
                              output_names=["output"],
                              dynamic_axes={"image": {0: "batch"},
                                            "output": {0: "batch"}},
                              opset_version=14, do_constant_folding=False,
                              training=torch.onnx.TrainingMode.TRAINING)
        print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def export_resnet18(path):
    import torchvision

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    torch.manual_seed(20240604)
    model = torchvision.models.resnet18(weights=None)
    export(model, (torch.randn(1, 3, 224, 224),), ["image"], path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=DEFAULT_OUT,
                        help="directory of the fixtures")
    parser.add_argument("--resnet18", metavar="PATH",
                        help="export only torchvision's resnet18 to PATH")
    parser.add_argument("--vision", action="store_true",
                        help="export the VISION models (for training) to "
                        "the output directory instead")
    args = parser.parse_args()
    if args.resnet18:
        export_resnet18(args.resnet18)
    elif args.vision:
        export_vision(args.out)
    else:
        export_fixtures(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
