#!/usr/bin/python3
"""Exercise kazoo's recipes and basic API against a ZooKeeper-protocol server.

Usage: /usr/bin/python3 recipes.py <connect-string> <chroot-name> [<connect-string-b>]

The second client (b, and d in the session test) uses <connect-string-b>
when given, e.g. to pin the two clients to different servers of an ensemble.

Runs a fixed, deterministic sequence of operations under /<chroot-name>
(created if missing) with two kazoo clients and prints a canonical JSON
transcript of everything observable that must be identical between two
correct servers: data, versions, child lists, error classes, recipe
outcomes, watch events. It never prints zxids, times, session ids or
recipe node names that embed random UUIDs. Exits non-zero on any
unexpected exception (traceback on stderr).

Concurrency (a second contender blocking on a lock, a double barrier) runs
in threads that are always joined; every wait is bounded and awaited through
ZooKeeper watches, never through sleeps.

The clients may be connected to different servers of an ensemble, and
ZooKeeper guarantees a client only its own writes and what its server has
applied: a read by one client of what another client just wrote is preceded
by sync() on the reading client (fresh()), as an application would do.
Otherwise the transcript depends on which servers kazoo happened to pick.
"""

import json
import logging
import sys
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.security import make_digest_acl, make_acl

WAIT = 15.0  # seconds; upper bound for any single wait


class Transcript:
    def __init__(self):
        self.entries = []

    def add(self, label, value):
        self.entries.append([label, value])

    def dump(self):
        return json.dumps(self.entries, sort_keys=True, indent=1, ensure_ascii=True)


def stat_view(stat, self_session=None):
    """The stat fields that must agree between servers."""
    if stat is None:
        return None
    owner = stat.ephemeralOwner
    if owner == 0:
        owner_view = "none"
    elif self_session is not None and owner == self_session:
        owner_view = "self"
    else:
        owner_view = "other"
    return {
        "version": stat.version,
        "cversion": stat.cversion,
        "aversion": stat.aversion,
        "dataLength": stat.dataLength,
        "numChildren": stat.numChildren,
        "owner": owner_view,
        "created==modified": stat.czxid == stat.mzxid,
        "pzxid==czxid": stat.pzxid == stat.czxid,
    }


def fresh(client, path):
    """Make client's server catch up with the leader before a read of what
    another client wrote (ZooKeeper's sync; a no-op on one server)."""
    client.sync(path)


def err_name(exc):
    return type(exc).__name__


def txn_view(results):
    """Transaction results: paths, stats (normalised), True, error classes."""
    out = []
    for r in results:
        if isinstance(r, Exception):
            out.append(err_name(r))
        elif hasattr(r, "mzxid"):
            out.append(stat_view(r))
        else:
            out.append(r)
    return out


def attempt(fn, *args, **kwargs):
    """Run fn, returning ["ok", value] or ["error", ExceptionClass]."""
    try:
        return ["ok", fn(*args, **kwargs)]
    except KazooException as e:
        return ["error", err_name(e)]


def must_wait(event, what):
    if not event.wait(WAIT):
        raise RuntimeError("timed out waiting for " + what)


def join(thread, what):
    thread.join(WAIT)
    if thread.is_alive():
        raise RuntimeError("thread did not finish: " + what)


class Thread(threading.Thread):
    """A thread that remembers its exception for the main thread."""

    def __init__(self, target):
        super().__init__(daemon=True)
        self._target_fn = target
        self.error = None

    def run(self):
        try:
            self._target_fn()
        except BaseException as e:  # reported by check()
            self.error = e

    def check(self):
        if self.error is not None:
            raise RuntimeError("thread failed: %r" % (self.error,))


def wait_children(client, path, count):
    """Block until path has at least count children (watch-driven)."""
    ready = threading.Event()

    def watcher(children):
        if len(children) >= count:
            ready.set()
            return False  # stop watching
        return True

    client.ensure_path(path)
    client.ChildrenWatch(path, watcher)
    must_wait(ready, "%d children under %s" % (count, path))


def crud(t, a, b):
    sid = a.client_id[0]
    t.add("create", a.create("/crud", b"root"))
    t.add("create makepath", a.create("/crud/x/y/z", b"deep", makepath=True))
    t.add("ensure_path", a.ensure_path("/crud/x/y"))
    data, st = a.get("/crud")
    t.add("get", [data.decode(), stat_view(st, sid)])
    t.add("set", stat_view(a.set("/crud", b"v1", version=0), sid))
    t.add("set stale", attempt(a.set, "/crud", b"v2", version=0))
    t.add("set any", stat_view(a.set("/crud", b"v2"), sid))
    t.add("create exists", attempt(a.create, "/crud", b""))
    t.add("create no parent", attempt(a.create, "/nope/child", b""))
    t.add("seq 1", a.create("/crud/s-", b"", sequence=True))
    t.add("plain", a.create("/crud/plain", None))
    t.add("seq 2", a.create("/crud/s-", b"", sequence=True))
    t.add("ephemeral", a.create("/crud/eph", b"e", ephemeral=True))
    t.add("ephemeral seq", a.create("/crud/eseq-", b"", ephemeral=True, sequence=True))
    t.add("child of ephemeral", attempt(a.create, "/crud/eph/c", b""))
    t.add("exists eph", stat_view(a.exists("/crud/eph"), sid))
    fresh(b, "/crud")
    t.add("exists eph from b", stat_view(b.exists("/crud/eph"), sid))
    t.add("exists missing", a.exists("/crud/missing"))
    t.add("null data is None", a.get("/crud/plain")[0] is None)
    t.add("children", sorted(a.get_children("/crud")))
    kids, st = a.get_children("/crud", include_data=True)
    t.add("children2", [sorted(kids), stat_view(st, sid)])
    t.add("delete not empty", attempt(a.delete, "/crud/x"))
    t.add("delete bad version", attempt(a.delete, "/crud/plain", version=3))
    t.add("delete", a.delete("/crud/plain", version=0))
    t.add("delete missing", attempt(a.delete, "/crud/plain"))
    t.add("delete recursive", a.delete("/crud/x", recursive=True))
    t.add("children after", sorted(a.get_children("/crud")))
    t.add("sync", b.sync("/crud"))
    t.add("get from b after sync", b.get("/crud")[0].decode())
    # include_data sends create2 (opcode 15), which returns the new stat.
    path, st = a.create("/crud/c2", b"c2", include_data=True)
    t.add("create2", [path, stat_view(st, sid)])
    path, st = a.create("/crud/c2e-", b"", ephemeral=True, sequence=True, include_data=True)
    t.add("create2 ephemeral sequential", [path, stat_view(st, sid)])
    t.add("create2 exists", attempt(a.create, "/crud/c2", b"", include_data=True))


def acls(t, a, b):
    alice = make_digest_acl("alice", "secret", all=True)
    world_read = make_acl("world", "anyone", read=True)
    a.create("/acl", b"")
    t.add("create digest node", a.create("/acl/priv", b"p", acl=[alice]))
    t.add("get priv without auth", attempt(a.get, "/acl/priv"))
    t.add("get_acls without auth", attempt(a.get_acls, "/acl/priv"))
    a.add_auth("digest", "alice:secret")
    t.add("get priv with auth", a.get("/acl/priv")[0].decode())
    acl_list, st = a.get_acls("/acl/priv")
    t.add("get_acls", [[x.perms, x.id.scheme, x.id.id] for x in acl_list] + [stat_view(st)])
    fresh(b, "/acl")
    t.add("b get priv", attempt(b.get, "/acl/priv"))
    t.add("set_acls", stat_view(a.set_acls("/acl/priv", [world_read, alice], version=0)))
    t.add("set_acls stale", attempt(a.set_acls, "/acl/priv", [world_read], version=0))
    fresh(b, "/acl")
    t.add("b get priv now", b.get("/acl/priv")[0].decode())
    t.add("b set priv", attempt(b.set, "/acl/priv", b"x"))
    t.add("b set_acls priv", attempt(b.set_acls, "/acl/priv", [world_read]))
    t.add("a set_acls read-only", stat_view(a.set_acls("/acl/priv", [world_read], version=1)))
    t.add("a set_acls without admin", attempt(a.set_acls, "/acl/priv", [alice], version=2))
    # kazoo replaces an empty ACL list with its default (world:anyone:ALL).
    t.add("empty acl", attempt(a.create, "/acl/empty", b"", acl=[]))
    t.add("empty acl result", [[x.perms, x.id.scheme, x.id.id] for x in a.get_acls("/acl/empty")[0]])


def watches(t, a, b):
    a.create("/watch", b"0")
    got = []
    fired = threading.Event()

    def on_event(event):
        got.append([event.type, event.path])
        fired.set()

    # exists watch on a missing node, set by b, triggered by a.
    b.exists("/watch/n", watch=on_event)
    a.create("/watch/n", b"")
    must_wait(fired, "NodeCreated")
    fired.clear()
    # data watch
    b.get("/watch", watch=on_event)
    a.set("/watch", b"1")
    must_wait(fired, "NodeDataChanged")
    fired.clear()
    # child watch
    b.get_children("/watch", watch=on_event)
    a.create("/watch/m", b"")
    must_wait(fired, "NodeChildrenChanged")
    fired.clear()
    # delete fires the data watch
    b.get("/watch/m", watch=on_event)
    a.delete("/watch/m")
    must_wait(fired, "NodeDeleted")
    fired.clear()
    t.add("watch events", got)

    # DataWatch / ChildrenWatch recipes: callbacks run on kazoo's event
    # thread; each expected call is awaited.
    calls = []
    call = threading.Condition()

    def record(entry):
        with call:
            calls.append(entry)
            call.notify_all()

    def await_calls(n):
        with call:
            if not call.wait_for(lambda: len(calls) >= n, WAIT):
                raise RuntimeError("watch recipe calls: %r" % (calls,))

    @a.DataWatch("/watch/dw")
    def data_watch(data, stat, event=None):
        record(["data", None if data is None else data.decode(),
                None if stat is None else stat.version,
                None if event is None else event.type])

    await_calls(1)
    b.create("/watch/dw", b"a")
    await_calls(2)
    b.set("/watch/dw", b"b")
    await_calls(3)
    b.delete("/watch/dw")
    await_calls(4)

    @a.ChildrenWatch("/watch")
    def child_watch(children):
        record(["children", sorted(children)])

    await_calls(5)
    b.create("/watch/c1", b"")
    await_calls(6)
    b.delete("/watch/c1")
    await_calls(7)
    t.add("watch recipes", calls)


def transactions(t, a):
    a.create("/txn", b"")
    tx = a.transaction()
    tx.create("/txn/a", b"a")
    tx.create("/txn/a/b", b"b")
    tx.set_data("/txn/a", b"a2", version=0)
    tx.check("/txn/a", 1)
    res = tx.commit()
    t.add("txn ok", txn_view(res))
    tx = a.transaction()
    tx.create("/txn/c", b"")
    tx.set_data("/txn/a", b"x", version=7)
    tx.delete("/txn/a/b")
    res = tx.commit()
    t.add("txn failed", txn_view(res))
    t.add("txn rolled back", a.exists("/txn/c") is None)
    tx = a.transaction()
    tx.delete("/txn/a/b")
    tx.delete("/txn/a")
    res = tx.commit()
    t.add("txn deletes", txn_view(res))
    t.add("txn children", sorted(a.get_children("/txn")))


def sessions(t, connect, connect_b):
    c = KazooClient(hosts=connect, timeout=10.0)
    c.start(timeout=WAIT)
    d = KazooClient(hosts=connect_b, timeout=10.0)
    d.start(timeout=WAIT)
    try:
        c.ensure_path("/sess")
        d.create("/sess/e1", b"", ephemeral=True)
        d.create("/sess/e2-", b"", ephemeral=True, sequence=True)
        gone = threading.Event()
        events = []

        def on_delete(event):
            events.append([event.type, event.path])
            gone.set()

        fresh(c, "/sess")
        c.exists("/sess/e1", watch=on_delete)
        t.add("ephemerals before close", sorted(c.get_children("/sess")))
        d.stop()
        d.close()
        must_wait(gone, "ephemeral deletion")
        t.add("ephemeral watch", events)
        t.add("ephemerals after close", sorted(c.get_children("/sess")))
    finally:
        for z in (c, d):
            z.stop()
            z.close()


def lock(t, a, b):
    la = a.Lock("/lock", "alpha")
    lb = b.Lock("/lock", "beta")
    t.add("lock a acquire", la.acquire(timeout=WAIT))
    t.add("lock b try", lb.acquire(blocking=False))
    acquired = threading.Event()
    got = []

    def contend():
        got.append(lb.acquire(timeout=WAIT))
        acquired.set()

    th = Thread(contend)
    th.start()
    # b's non-blocking attempt created and deleted a node: a's server must
    # not count that one as the second contender.
    fresh(a, "/lock")
    wait_children(a, "/lock", 2)
    t.add("lock contenders", la.contenders())
    t.add("lock b waiting", not acquired.is_set())
    t.add("lock a release", la.release())
    must_wait(acquired, "lock handover")
    join(th, "lock contender")
    th.check()
    t.add("lock b acquired", got)
    t.add("lock contenders after", lb.contenders())
    t.add("lock b release", lb.release())
    fresh(a, "/lock")
    t.add("lock contenders end", la.contenders())

    sem = a.Semaphore("/sem", "alpha", max_leases=2)
    sem_b = b.Semaphore("/sem", "beta", max_leases=2)
    t.add("semaphore a", sem.acquire(timeout=WAIT))
    t.add("semaphore b", sem_b.acquire(timeout=WAIT))
    fresh(a, "/sem")
    t.add("semaphore holders", sorted(sem.lease_holders()))
    sem.release()
    sem_b.release()
    fresh(a, "/sem")
    t.add("semaphore holders end", sorted(sem.lease_holders()))


def election(t, a, b):
    ea = a.Election("/election", "alpha")
    eb = b.Election("/election", "beta")
    log = []
    b_done = threading.Event()

    def b_leads():
        log.append(["beta leads", eb.contenders()])
        b_done.set()

    th = Thread(lambda: eb.run(b_leads))

    def a_leads():
        log.append(["alpha leads", ea.contenders()])
        th.start()
        wait_children(a, "/election", 2)
        log.append(["while alpha leads", ea.contenders()])

    ea.run(a_leads)
    must_wait(b_done, "beta elected")
    join(th, "beta election")
    th.check()
    t.add("election", log)
    fresh(a, "/election")
    t.add("election contenders end", ea.contenders())


def barriers(t, a, b):
    bar = a.Barrier("/barrier")
    bar.create()
    t.add("barrier wait with timeout", bar.wait(timeout=0.2))
    passed = []
    th = Thread(lambda: passed.append(b.Barrier("/barrier").wait(timeout=WAIT)))
    th.start()
    # The waiter sets an exists watch; removing the barrier releases it.
    t.add("barrier remove", bar.remove())
    join(th, "barrier waiter")
    th.check()
    t.add("barrier released", passed)
    t.add("barrier wait open", bar.wait(timeout=1))

    da = a.DoubleBarrier("/dbarrier", 2, "alpha")
    db = b.DoubleBarrier("/dbarrier", 2, "beta")
    entered = threading.Event()
    th = Thread(lambda: (db.enter(), entered.set()))
    th.start()
    da.enter()
    must_wait(entered, "double barrier enter")
    join(th, "double barrier enter")
    th.check()
    t.add("double barrier entered", [da.participating, db.participating])
    fresh(a, "/dbarrier")
    t.add("double barrier members", len(a.get_children("/dbarrier")))
    th = Thread(db.leave)
    th.start()
    da.leave()
    join(th, "double barrier leave")
    th.check()
    t.add("double barrier left", [da.participating, db.participating])
    fresh(a, "/dbarrier")
    t.add("double barrier empty", a.get_children("/dbarrier"))


def counter(t, a, b):
    c = a.Counter("/counter")
    c += 5
    t.add("counter +5", [c.pre_value, c.post_value])
    c -= 2
    t.add("counter -2", [c.pre_value, c.post_value])
    cb = b.Counter("/counter")
    cb += 10
    t.add("counter from b", cb.value)
    fresh(a, "/counter")
    t.add("counter value", c.value)
    f = a.Counter("/fcounter", default=0.5)
    f += 1.25
    t.add("float counter", f.value)
    cur = a.Counter("/ccounter", support_curator=True)
    cur += 7
    t.add("curator counter", [cur.value, a.get("/ccounter")[0].hex()])


def party(t, a, b):
    pa = a.Party("/party", "alpha")
    pb = b.Party("/party", "beta")
    pa.join()
    pb.join()
    fresh(a, "/party")
    t.add("party members", sorted(pa))
    t.add("party size", len(pa))
    pb.leave()
    fresh(a, "/party")
    t.add("party after leave", sorted(pa))
    pa.leave()
    t.add("party empty", len(pa))
    sa = a.ShallowParty("/shallow", "alpha")
    sb = b.ShallowParty("/shallow", "beta")
    sa.join()
    sb.join()
    fresh(a, "/shallow")
    t.add("shallow party", sorted(sa))
    sa.leave()
    sb.leave()
    fresh(a, "/shallow")
    t.add("shallow party empty", len(sa))


def queues(t, a, b):
    q = a.Queue("/queue")
    q.put(b"low", priority=100)
    q.put(b"high", priority=10)
    q.put(b"mid", priority=50)
    q.put(b"low2", priority=100)
    t.add("queue len", len(q))
    qb = b.Queue("/queue")
    fresh(b, "/queue")
    t.add("queue order", [qb.get().decode() for _ in range(4)])
    fresh(a, "/queue")
    t.add("queue empty get", q.get())
    t.add("queue len end", len(q))

    lq = a.LockingQueue("/lqueue")
    lq.put(b"x", priority=100)
    lq.put_all([b"y", b"z"], priority=50)
    t.add("locking queue len", len(lq))
    t.add("locking queue a get", lq.get(timeout=WAIT).decode())
    t.add("locking queue a holds lock", lq.holds_lock())
    lqb = b.LockingQueue("/lqueue")
    t.add("locking queue b get skips locked", lqb.get(timeout=WAIT).decode())
    t.add("locking queue a release", lq.release())
    t.add("locking queue a holds lock after release", lq.holds_lock())
    t.add("locking queue b consume", lqb.consume())
    fresh(a, "/lqueue")
    t.add("locking queue len after consume", len(lq))
    t.add("locking queue a get again", lq.get(timeout=WAIT).decode())
    t.add("locking queue a consume", lq.consume())
    t.add("locking queue a get last", lq.get(timeout=WAIT).decode())
    t.add("locking queue a consume last", lq.consume())
    t.add("locking queue len end", len(lq))
    t.add("locking queue get empty", lq.get(timeout=0.2))


def main():
    if len(sys.argv) not in (3, 4):
        sys.stderr.write("usage: recipes.py <connect-string> <chroot-name> [<connect-string-b>]\n")
        return 2
    connect, name = sys.argv[1], sys.argv[2].strip("/")
    connect_b = sys.argv[3] if len(sys.argv) == 4 else connect
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    root = KazooClient(hosts=connect, timeout=10.0)
    root.start(timeout=WAIT)
    try:
        root.ensure_path("/" + name)
    finally:
        root.stop()
        root.close()

    chrooted = connect + "/" + name
    chrooted_b = connect_b + "/" + name
    t = Transcript()
    a = KazooClient(hosts=chrooted, timeout=10.0)
    b = KazooClient(hosts=chrooted_b, timeout=10.0)
    a.start(timeout=WAIT)
    b.start(timeout=WAIT)
    try:
        crud(t, a, b)
        acls(t, a, b)
        watches(t, a, b)
        transactions(t, a)
        sessions(t, chrooted, chrooted_b)
        lock(t, a, b)
        election(t, a, b)
        barriers(t, a, b)
        counter(t, a, b)
        party(t, a, b)
        queues(t, a, b)
        fresh(a, "/")
        t.add("top level", sorted(a.get_children("/")))
    finally:
        for z in (a, b):
            z.stop()
            z.close()
    sys.stdout.write(t.dump() + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except BaseException:
        import traceback
        traceback.print_exc()
        sys.exit(1)
