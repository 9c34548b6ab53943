"""Authentication and authorisation at the edge: bearer keys, their scopes, and who may call what.

``keyring`` signs and verifies keys, ``revocations`` keeps the revoked ids current from the log,
``policy`` says which key reaches which operation (transport-neutral: the HTTP gate here, and any
other edge, call the same function), ``authority`` puts them together and ``gate`` is the HTTP
wiring in front of the app.
"""
