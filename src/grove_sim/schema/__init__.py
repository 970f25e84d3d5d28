"""Custom-resource schemas: structural-schema pruning, defaulting and validation, and the CEL rules they declare.

Pure and independent of HTTP: a CRD version's ``openAPIV3Schema`` compiles once into a ``StructuralSchema`` whose
walks render apiserver-style field errors.
"""
