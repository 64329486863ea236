"""Runs kazoo operations against a ZooKeeper-protocol server as one SASL DIGEST-MD5 user and
prints one line per outcome (the Go tests compare them between servers).

usage: kazoo_sasl.py HOSTS USER PASSWORD OP...   (USER "" = no SASL; USER "GSSAPI" = Kerberos
with the credentials of the environment, KRB5_CONFIG and KRB5CCNAME; tests/kerberos)
OP: create:PATH:ACLUSER (ACL sasl:ACLUSER:cdrwa), get:PATH, getacl:PATH, whoami

kazoo's warnings (AUTH_FAILED closing: ...) come from its connection thread at a moment that
races with the main thread's output, so they are collected and printed last, as "log:" lines.
"""
import logging
import sys

from kazoo.client import KazooClient
from kazoo.security import ACL, Id, Permissions


class Collect(logging.Handler):
    def __init__(self):
        logging.Handler.__init__(self, logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


logs = Collect()
logging.getLogger().addHandler(logs)


def flush_logs():
    for line in logs.lines:
        print("log: %s" % line)


hosts, user, password = sys.argv[1:4]
opts = None
if user == "GSSAPI":
    opts = {"mechanism": "GSSAPI"}
elif user:
    opts = {"mechanism": "DIGEST-MD5", "username": user, "password": password}
states = []
zk = KazooClient(hosts=hosts, sasl_options=opts, timeout=10,
                 connection_retry={"max_tries": 0})
zk.add_listener(lambda s: states.append(str(s)))
try:
    zk.start(timeout=15)
    print("start: ok")
except Exception as e:  # noqa: BLE001 - the class is the outcome
    print("start: %s" % type(e).__name__)
    print("states: %s" % ",".join(states))
    zk.stop()
    zk.close()
    flush_logs()
    sys.exit(0)

for op in sys.argv[4:]:
    kind, _, arg = op.partition(":")
    try:
        if kind == "create":
            path, _, acluser = arg.partition(":")
            acl = ACL(Permissions.ALL, Id("sasl", acluser))
            print("create: %s" % zk.create(path, b"x", acl=[acl]))
        elif kind == "get":
            print("get: %r" % zk.get(arg)[0])
        elif kind == "getacl":
            print("getacl: %s" % ["%s:%s:%d" % (a.id.scheme, a.id.id, a.perms) for a in zk.get_acls(arg)[0]])
        else:
            raise SystemExit("unknown op " + op)
    except Exception as e:  # noqa: BLE001
        print("%s: %s" % (kind, type(e).__name__))
zk.stop()
zk.close()
flush_logs()
