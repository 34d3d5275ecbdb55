#!/usr/bin/env python3
"""A hostile Redis server for the remote-cache tests (tests/test-remote.sh, through tests/redis-lib.sh's
fake_start and fake_answer): it speaks just enough RESP to be taken for Redis, and answers what it is
told to, as slowly as it is told to.

    fake-redis.py DIR [CERT KEY]

Listens on a free loopback port and writes it to DIR/port once it accepts connections; with CERT
and KEY (PEM files), it speaks TLS, each connection's handshake in its own thread. Each command
it receives is logged, its name alone, as a line of DIR/commands, and answered, as DIR says at that
moment (so that a test changes the answers without starting another server):
  - DIR/NAME.reply (NAME in capitals) holds the reply, raw RESP with C escapes ('*2\\r\\n:1\\r\\n');
    without one: PING +PONG, AUTH and SELECT +OK, anything else -ERR unknown command;
  - with DIR/NAME.trickle, the reply goes one byte every 100 ms (a few thousand bytes take minutes);
  - with DIR/NAME.flood, the reply is followed by zeros as fast as the client takes them (a header
    that announces a huge string, and the bytes to go with it);
  - with DIR/NAME.close, the connection is closed after the reply (over TLS without TLS's
    close_notify, as a server that drops idle connections may).
Runs until it is killed. Python 3 standard library only.
"""
import codecs
import os
import socketserver
import sys
import threading
import time

DEFAULTS = {'PING': b'+PONG\r\n', 'AUTH': b'+OK\r\n', 'SELECT': b'+OK\r\n'}


def read_command(f):
    """One command (a RESP array of bulk strings, or an inline line) as a list of bytes; None at EOF."""
    line = f.readline()
    if not line:
        return None
    if not line.startswith(b'*'):
        return line.split()
    args = []
    for _ in range(int(line[1:])):
        n = int(f.readline()[1:])
        args.append(f.read(n + 2)[:n])
    return args


class Handler(socketserver.StreamRequestHandler):
    def setup(self):
        if self.server.tls:
            try:
                self.request.do_handshake()
            except OSError:  # ssl.SSLError is one
                self.request.close()
                raise
        super().setup()

    def handle(self):
        d = self.server.dir
        while True:
            try:
                cmd = read_command(self.rfile)
            except (ValueError, OSError):
                return
            if cmd is None:
                return
            name = cmd[0].decode('utf-8', 'replace').upper() if cmd else ''
            with self.server.log_lock, open(os.path.join(d, 'commands'), 'a') as log:
                log.write(name + '\n')
            base = os.path.join(d, name)
            try:
                with open(base + '.reply', encoding='utf-8') as f:
                    reply = codecs.escape_decode(f.read().encode('utf-8'))[0]
            except OSError:
                reply = DEFAULTS.get(name, b'-ERR unknown command\r\n')
            try:
                if os.path.exists(base + '.trickle'):
                    for i in range(len(reply)):
                        self.wfile.write(reply[i:i + 1])
                        self.wfile.flush()
                        time.sleep(0.1)
                else:
                    self.wfile.write(reply)
                    self.wfile.flush()
                if os.path.exists(base + '.flood'):
                    zeros = bytes(1 << 16)
                    while True:
                        self.wfile.write(zeros)
                if os.path.exists(base + '.close'):
                    return
            except OSError:
                return


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    tls = None

    def get_request(self):
        sock, addr = self.socket.accept()
        if self.tls:
            # the handshake in the connection's thread (Handler.setup): a client that stalls it stalls no other
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request, client_address):
        pass  # a client that hangs up, or refuses the certificate: nothing to report


def main():
    if len(sys.argv) not in (2, 4):
        sys.stderr.write('usage: fake-redis.py DIR [CERT KEY]\n')
        return 2
    server = Server(('127.0.0.1', 0), Handler)
    server.dir = sys.argv[1]
    if len(sys.argv) == 4:
        import ssl  # only here: a plain server starts as fast as it can
        server.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.tls.load_cert_chain(sys.argv[2], sys.argv[3])
    server.log_lock = threading.Lock()
    port = os.path.join(server.dir, 'port')
    with open(port + '.tmp', 'w') as f:
        f.write('%d\n' % server.server_address[1])
    os.rename(port + '.tmp', port)
    server.serve_forever()
    return 0


if __name__ == '__main__':
    sys.exit(main())
