"""Pure API machinery shared by every layer: Status errors, quantities, selectors, patches, JSONPath, Go rendering.

The counterparts of ``k8s.io/apimachinery`` packages (``api/errors``, ``api/resource``, ``labels``/``fields``,
``util/strategicpatch``) and of client-go's JSONPath, with upstream wording wherever clients show messages.
"""
