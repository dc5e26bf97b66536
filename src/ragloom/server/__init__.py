"""The HTTP sidecar (`ragloom serve`): FastAPI app, error mapping, auth and limits.

Import `ragloom.server.app.create_app` or `ragloom.server.runner.serve`; this package's
`errors` module is framework-free so that `ragloom.Client` can share it.
"""
