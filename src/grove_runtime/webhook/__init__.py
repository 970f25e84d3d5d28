"""Admission webhook machinery, split as controller-runtime splits it: programs bring handlers, this brings the rest.

* ``review``: ``admission.k8s.io/v1`` AdmissionReview in and out, responses and ``Status`` builders;
* ``jsonpatch``: the JSON patch a defaulting webhook answers with (the difference it made);
* ``handlers``: typed ``Defaulter`` and ``Validator`` protocols and the handlers that adapt them to reviews;
* ``server``: the HTTPS server (aiohttp) that routes paths to handlers, with metrics;
* ``certs`` and ``certsource``: a CA and serving certificate made with ``cryptography``, kept in a Secret shared
  by replicas (or read from files), renewed before expiry;
* ``registration``: Mutating/ValidatingWebhookConfigurations created or updated to point at this server.
"""
