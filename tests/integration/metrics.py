"""gil-record --metrics scraped by a real Prometheus server (Debian's prometheus, started and
stopped here, on loopback). Two threads contend for the GIL and one makes ctypes calls, then
all sit idle; once the server has scraped the idle counters, its HTTP API must give each
thread's hold seconds within 1% of what the file's intervals add up to, and its forced and
voluntary release counters the file's counts. The endpoint speaks the text format's content
type, answers 404 elsewhere, and a port in use is a usage error before any probe. With
--no-files the same counters are served and nothing is written."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from giltest import *  # noqa: E402,F401,F403

SPINNERS, SECONDS, CALLS = 2, 2, 300


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return None, None, ""


require_kernel()
prom = shutil.which("prometheus")
if not prom:
    skip("no prometheus (Debian: apt-get install prometheus; tools/deps.sh --test does)")
py = [exe for _, exe, ver in pythons(include_system=False) if ver >= (3, 7)][-1]
work = tempfile.mkdtemp(prefix="metrics-")

# a port in use: one line, exit 2, no probe
busy = socket.socket()
busy.bind(("127.0.0.1", 0))
busy.listen(1)
p = subprocess.run([GIL_RECORD, "--metrics", "127.0.0.1:%d" % busy.getsockname()[1], "--pid",
                    str(os.getpid())], capture_output=True, text=True, timeout=60)
check(p.returncode == 2 and re.match(r"gil-record: cannot serve --metrics on 127\.0\.0\.1:\d+: "
                                     r"Address already in use \(choose another port\)\n",
                                     p.stderr), "a port in use: rc %d, %r" % (p.returncode,
                                                                              p.stderr))
busy.close()
check_no_probes()

port, pport = free_port(), free_port()
w = Workload(py, "idle_after.py", SPINNERS, SECONDS, CALLS)
rec = Recorder("--pid", w.pid, "--metrics", "127.0.0.1:%d" % port)
base = "http://127.0.0.1:%d" % port
status, ctype, text = wait_for(lambda: (lambda r: r[0] == 200 and r)(get(base + "/metrics")),
                               "gil-record serving /metrics")
check(ctype == "text/plain; version=0.0.4; charset=utf-8", "content type %r" % ctype)
check(get(base + "/nothing")[0] == 404, "a path other than /metrics is not 404")

with open(os.path.join(work, "prometheus.yml"), "w") as f:
    f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: gil\n"
            "    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % port)
server = subprocess.Popen([prom, "--config.file=" + os.path.join(work, "prometheus.yml"),
                           "--storage.tsdb.path=" + os.path.join(work, "data"),
                           "--web.listen-address=127.0.0.1:%d" % pport],
                          stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prom.log"),
                                                                 "w"))
api = "http://127.0.0.1:%d/api/v1/" % pport


def query(expr):
    status, _, body = get(api + "query?" + urllib.parse.urlencode({"query": expr}))
    if status != 200:
        return None
    return json.loads(body)["data"]["result"]


try:
    w.go()
    words = w.wait_done()
    idle_at, tids = int(words[0]), [int(t) for t in words[1:]]
    # the server's last scrape of the idle counters: one that began 2 s after the threads idled
    after = time.time() + 2
    wait_for(lambda: (lambda r: r and float(r[0]["value"][1]) > after)(
        query('timestamp(giltrace_events_total{job="gil"})')),
        "prometheus scraping gil-record after the threads went idle")
    holds = {int(r["metric"]["tid"]): float(r["value"][1])
             for r in query('giltrace_thread_hold_seconds_total{pid="%d"}' % w.pid)
             if r["metric"]["tid"] != "other"}
    releases = {(int(r["metric"]["tid"]), r["metric"]["reason"]): int(r["value"][1])
                for r in query('giltrace_thread_releases_total{pid="%d"}' % w.pid)
                if r["metric"]["tid"] != "other"}
    ratio = query('giltrace_gil_held_ratio{pid="%d"}' % w.pid)
    check(ratio and float(ratio[0]["value"][1]) < 0.05,
          "the GIL held ratio of an idle process: %s" % ratio)
finally:
    server.terminate()
    server.wait(30)
w.poke()
check(w.readline(60).startswith("bye"), "the workload did not end its threads")
w.finish()
rc = rec.wait()
check(rc == 0, "gil-record exited %d: %s" % (rc, rec.err))
header, records, footer = read_recording(rec.files()[0])
failures, rows = [], []
for tid in tids:
    mine = [r for r in intervals(records, tid) if r[2] < idle_at]
    hold = sum(r[3] for r in mine if r[1] == 1) / 1e9
    forced = sum(1 for r in mine if r[1] == 2 and r[6] == 2)
    voluntary = sum(1 for r in mine if r[1] == 2 and r[6] == 1)
    got = holds.get(tid)
    rows.append("tid %d: hold %.6f s in the file, %s by prometheus; forced %d / %s, voluntary "
                "%d / %s" % (tid, hold, got, forced, releases.get((tid, "forced")), voluntary,
                             releases.get((tid, "voluntary"))))
    if got is None or abs(got - hold) > 0.01 * hold:
        failures.append("tid %d: hold seconds %s by prometheus, %.6f in the file" % (tid, got,
                                                                                    hold))
    if releases.get((tid, "forced")) != forced or releases.get((tid, "voluntary")) != voluntary:
        failures.append("tid %d: releases forced %s voluntary %s by prometheus, %d and %d in "
                        "the file" % (tid, releases.get((tid, "forced")),
                                      releases.get((tid, "voluntary")), forced, voluntary))
log("\n".join(rows))

# --no-files: the same counters, no directory and no file
w = Workload(py, "busy_calls.py")
port = free_port()
cwd = tempfile.mkdtemp(prefix="nofiles-")
p = subprocess.Popen(record_command() + ["--pid", str(w.pid), "--metrics", str(port),
                                         "--no-files"], cwd=cwd, stderr=subprocess.PIPE,
                     text=True, env=dict(os.environ, SYSTRACE_DUMP_PATH=cwd))
w.go()
w.calls_made(50)
counted = re.compile(r'giltrace_thread_releases_total\{pid="%d",.*reason="voluntary"\} [1-9]'
                     % w.pid)
got = wait_for(lambda: p.poll() is not None and "ended" or (
    lambda r: r[0] == 200 and counted.search(r[2]) and r)(
    get("http://127.0.0.1:%d/metrics" % port)), "gil-record --no-files counting the releases")
if got == "ended":
    w.kill()
    fail("gil-record --no-files ended (rc %s): %s" % (p.returncode, p.stderr.read()))
w.finish()
rc, err = wait_recorder(p, "--no-files")
check(rc == 0 and "(no file)" in err, "--no-files: rc %d: %s" % (rc, err))
check(os.listdir(cwd) == [], "--no-files wrote %s" % os.listdir(cwd))
check(sum(releases.get((t, "forced"), 0) for t in tids) > 0, "no forced release counted")
if failures:
    fail("; ".join(failures))
log("PASS: %d threads, their hold seconds and release counts as prometheus scraped them" %
    len(tids))
