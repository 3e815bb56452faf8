"""Neural-network layers on hal Tensors; every backend runs them.

    from frontends import nn
    layer = nn.Linear(384, 1536, activation="gelu")
    cnn = nn.Sequential(nn.Conv(1, 8, 3, padding=1), nn.BatchNorm(8), nn.MaxPool(2))
    resnet50 = nn.ResNet(nn.RESNET50, seed=0).eval()  # random weights (frontends.nn.resnet)
    encoder, tokenizer = nn.load_minilm()             # all-MiniLM-L6-v2 on hal's BertModel
    encoder.encode(["A man is eating food."])         # (1, 384) unit vectors
"""

from .bert import (
    BertConfig,
    BertModel,
    SentenceEncoder,
    from_hf_state,
    mean_pool,
    normalize,
    tokenize,
)
from .conv_layers import AvgPool, BatchNorm, Conv, MaxPool, RMSNorm
from .layer import Layer
from .layers import (
    MLP,
    Dropout,
    Embedding,
    LayerNorm,
    Linear,
    MultiHeadAttention,
    Sequential,
    TransformerEncoderLayer,
)
from .llama import Llama, LlamaConfig
from .pretrained import load_bert, load_minilm, load_tokenizer, model_dir
from .resnet import RESNET50, ResNet, ResNetConfig

__all__ = [
    "MLP",
    "RESNET50",
    "AvgPool",
    "BatchNorm",
    "BertConfig",
    "BertModel",
    "Conv",
    "Dropout",
    "Embedding",
    "Layer",
    "LayerNorm",
    "Linear",
    "Llama",
    "LlamaConfig",
    "MaxPool",
    "MultiHeadAttention",
    "RMSNorm",
    "ResNet",
    "ResNetConfig",
    "SentenceEncoder",
    "Sequential",
    "TransformerEncoderLayer",
    "from_hf_state",
    "load_bert",
    "load_minilm",
    "load_tokenizer",
    "mean_pool",
    "model_dir",
    "normalize",
    "tokenize",
]
