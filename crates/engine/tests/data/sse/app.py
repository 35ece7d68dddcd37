# The SSE server the capture `starlette.sse` came from: sse-starlette under uvicorn (PyPI), on a port-0 loopback
# socket. Recapture: python3 app.py > port & curl -sN http://127.0.0.1:$(cat port)/stream > starlette.sse
import asyncio, socket, sys
import uvicorn
from sse_starlette.sse import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.routing import Route

async def events(request):
    async def gen():
        for i in range(5):
            yield ServerSentEvent(data=f"line one {i}\nline two {i}", event="tick", id=str(i))
            yield ServerSentEvent(comment="heartbeat")
            await asyncio.sleep(0.05)
        yield ServerSentEvent(data="[DONE]")
    return EventSourceResponse(gen(), ping=1, sep="\r\n")

sock = socket.socket(); sock.bind(("127.0.0.1", 0)); print(sock.getsockname()[1], flush=True)
uvicorn.Server(uvicorn.Config(Starlette(routes=[Route("/stream", events)]), log_level="warning")).run(sockets=[sock])
