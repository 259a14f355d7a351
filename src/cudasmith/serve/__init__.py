"""The judge as a service (`cudasmith serve`): candidates come over HTTP, verdicts and rewards go back.

The server's process holds the HTTP API (app.py, FastAPI on uvicorn: server.py), the service behind it
(service.py: the queue, the store, submissions found again after a restart), and an executor's lanes (one
judge session per problem, options and GPU; exec/), whose sandboxed workers are the only processes that
run candidate code. Every submission and verdict is in the run store (store/) before anyone hears of it.

client.py, with protocol.py, is what a trainer or a search framework imports: the standard library only.
FastAPI and uvicorn (`pip install 'cudasmith[serve]'`) are imported by the server alone.
"""
