//! Linear tetrahedral FEM: element stiffness, lumped mass, sparse assembly, fixed nodes.
