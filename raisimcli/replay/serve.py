"""The replay page served on a local web server (`raisimcli view`)."""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(page: bytes, host: str, port: int, open_browser: bool = False) -> None:
    """Serve `page` at / (and /index.html) on host:port (port 0: a free one) until Ctrl-C; the
    address goes to stdout when the server listens."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802  (http.server's name)
            if self.path.split("?")[0] not in ("/", "/index.html"):
                self.send_error(404, "only the replay page is served here")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, format, *args):  # no line per request
            pass

    with ThreadingHTTPServer((host, port), Handler) as server:
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{server.server_address[1]}/"
        print(f"serving the replay at {url} (Ctrl-C stops)", flush=True)
        if open_browser:
            import webbrowser
            webbrowser.open(url)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("stopped", file=sys.stderr)
