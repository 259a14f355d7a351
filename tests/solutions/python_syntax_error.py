"""A solution that is not valid Python."""

class ModelNew(nn.Module)
    def forward(self, a, b):
        return a + b
