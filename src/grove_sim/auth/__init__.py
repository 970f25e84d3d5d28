"""Who is calling: kube-apiserver's authentication step (bearer tokens to users).

Only authentication lives here today: every authenticated (or anonymous) request is allowed, as on a cluster with
``--authorization-mode=AlwaysAllow``. The user a request resolves to is what admission webhooks see as
``AdmissionReview.request.userInfo`` and what ``kubectl auth whoami`` prints; an authorizer (RBAC) would sit beside
this module and decide per request.
"""
