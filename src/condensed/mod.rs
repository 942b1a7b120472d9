//! Condensed static FEM: surface compliance columns from the sparse Cholesky factor.
