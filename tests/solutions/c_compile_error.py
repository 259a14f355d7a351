"""A C kernel that does not compile (an undeclared variable)."""

from torch import nn

from cudasmith.runtime import compile_c

vector_add = compile_c(
    "void vector_add(const float* a, float* out, long n) { out[0] = a[0] + missing; }", "vector_add"
)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a
