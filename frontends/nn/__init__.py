"""Neural-network layers on hal Tensors; every backend runs them.

    from frontends import nn
    layer = nn.Linear(384, 1536, activation="gelu")
"""

from .layer import Layer
from .layers import Linear

__all__ = ["Layer", "Linear"]
