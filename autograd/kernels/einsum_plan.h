#pragma once
// einsum parsing and planning; filled in with the linalg ops.
