#!/usr/bin/env python3
"""tests/ui/test_page.py — the what-if page of `ptsim serve` driven as a person would, in headless Chromium.

Starts `ptsim serve --port 0`, opens the page in Chromium (Debian's `chromium`) and speaks the DevTools
protocol to it over --remote-debugging-pipe (fd 3: commands in, fd 4: answers out, JSON messages ended by a
NUL byte; Python's standard library only). Then, as a planner would:
  1. the T4 academic cluster loads (10 GbE);
  2. the network becomes InfiniBand EDR: the predicted time to train drops, and equals what
     `ptsim predict --scenario t4-academic-cluster --set cluster.network=ib-edr --format json` prints (to 1e-9
     relative: the page's figures are the same library run; 1e-9 only absorbs JSON's double round trip);
  3. a micro-batch of 4096 cannot fit a 16 GB T4: the simulator's message — the one `ptsim predict` prints for
     the same edits — appears next to the micro-batch control;
  4. compare: pin the InfiniBand run, go back to 10 GbE, and the time shows its increase against the pin.
Screenshots go to the build directory (serve-page.png, serve-error.png). Exit 77 (meson: skipped) when
chromium is not installed or ptsim was built without `ptsim serve`.
Usage: test_page.py PTSIM_BINARY OUT_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SCENARIO = "t4-academic-cluster"
DEADLINE_S = 90  # the whole test; a run takes ~10 s


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def find_chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """Headless Chromium and one page, spoken to over the DevTools pipe."""

    def __init__(self, chromium, profile_dir):
        cmd_read, self.cmd_write = os.pipe()
        self.resp_read, resp_write = os.pipe()

        def wire_fds():  # in the child: commands on fd 3, answers on fd 4
            a, b = os.dup(cmd_read), os.dup(resp_write)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--user-data-dir=" + profile_dir, "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-sync", "--mute-audio",
             "--hide-scrollbars", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire_fds, pass_fds=(3, 4))  # kept open: the wiring runs before the other fds close
        os.close(cmd_read)
        os.close(resp_write)
        self.buffer = b""
        self.next_id = 0
        self.session = None

    def send(self, method, params=None, session=True):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.cmd_write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.receive()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    fail("DevTools {} failed: {}".format(method, reply["error"]))
                return reply.get("result", {})

    def receive(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.resp_read, 1 << 20)
            if not chunk:
                fail("chromium closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url, width=1440, height=1050):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        self.send("Page.navigate", {"url": url})

    def js(self, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            fail("page script failed: {} ({})".format(expression, result["exceptionDetails"]))
        return result["result"].get("value")

    def wait_for(self, expression, what, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.05)
        fail("timed out after {} s waiting for {} (page status: {}, error: {})".format(
            timeout, what, self.js("document.body && document.body.dataset.status"),
            self.js("window.ptsim && JSON.stringify(window.ptsim.error)")))

    def screenshot(self, path):
        import base64
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.session = None
            os.write(self.cmd_write, json.dumps({"id": 999999, "method": "Browser.close"}).encode() + b"\0")
            self.proc.wait(timeout=5)
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.cmd_write, self.resp_read):
            try:
                os.close(fd)
            except OSError:
                pass


def start_server(ptsim):
    proc = subprocess.Popen([ptsim, "serve", "--port", "0", "--quiet"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "http://" not in line:
        err = proc.stderr.read()
        proc.wait()
        if "built without cpp-httplib" in err:
            print("SKIP: " + err.strip())
            sys.exit(77)
        fail("ptsim serve did not print its URL: {!r} {!r}".format(line, err))
    return proc, line[line.index("http://"):].split()[0]


def stop_server(proc):
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        fail("ptsim serve did not stop within 10 s of SIGTERM")
    if proc.returncode != 0 or "stopped" not in out:
        fail("ptsim serve stopped with exit {} and output {!r}".format(proc.returncode, out))


def cli_predict(ptsim, sets):
    args = [ptsim, "predict", "--scenario", SCENARIO, "--format", "json"]
    for key, value in sets.items():
        args += ["--set", "{}={}".format(key, value)]
    run = subprocess.run(args, capture_output=True, text=True, timeout=60)
    return run.returncode, run.stdout, run.stderr


def main():
    if len(sys.argv) != 3:
        fail("usage: test_page.py PTSIM_BINARY OUT_DIR")
    ptsim, out_dir = sys.argv[1], sys.argv[2]
    chromium = find_chromium()
    if not chromium:
        print("SKIP: chromium is not installed (apt-get install chromium; tools/bootstrap.sh does)")
        return 77
    start = time.time()
    server, url = start_server(ptsim)
    profile = tempfile.mkdtemp(prefix="ptsim_ui_")
    browser = None
    try:
        browser = Browser(chromium, profile)
        browser.open(url)
        # 1. The page loads the T4 cluster over 10 GbE and predicts it.
        browser.wait_for("document.body && document.body.dataset.status === 'idle' && window.ptsim.last !== null",
                         "the first prediction")
        network = browser.js("document.getElementById('network').value")
        if network != "10gbe-tcp":
            fail("the T4 scenario's network control shows {!r}, expected 10gbe-tcp".format(network))
        t_10gbe = browser.js("window.ptsim.last.prediction.time_to_train_seconds")
        code, out, err = cli_predict(ptsim, {})
        cli_10gbe = json.loads(out)["time_to_train_seconds"]
        if abs(t_10gbe - cli_10gbe) > 1e-9 * cli_10gbe:
            fail("the page's time to train {} differs from ptsim predict's {}".format(t_10gbe, cli_10gbe))

        # 2. 10 GbE → InfiniBand EDR: faster, and the number ptsim predict prints.
        browser.js("(function(){var e=document.getElementById('network'); e.value='ib-edr';"
                   "e.dispatchEvent(new Event('change'));})()")
        browser.wait_for("document.body.dataset.status === 'idle' && window.ptsim.last && "
                         "window.ptsim.last.request.set['cluster.network'] === 'ib-edr'", "the InfiniBand prediction")
        t_ib = browser.js("window.ptsim.last.prediction.time_to_train_seconds")
        if not t_ib < t_10gbe:
            fail("InfiniBand should train faster than 10 GbE: {} s vs {} s".format(t_ib, t_10gbe))
        code, out, err = cli_predict(ptsim, {"cluster.network": "ib-edr"})
        if code != 0:
            fail("ptsim predict failed: " + err)
        cli_ib = json.loads(out)["time_to_train_seconds"]
        if abs(t_ib - cli_ib) > 1e-9 * cli_ib:
            fail("the page's InfiniBand time {} differs from ptsim predict's {}".format(t_ib, cli_ib))
        shown = browser.js("document.getElementById('f-time').textContent")
        expected_days = "{:.2f} days".format(cli_ib / 86400)
        if shown != expected_days:
            fail("the time-to-train figure reads {!r}, expected {!r}".format(shown, expected_days))
        print("10 GbE {:.0f} s -> InfiniBand {:.0f} s (page shows {}), equal to ptsim predict".format(t_10gbe, t_ib, shown))

        # 4 (first half). Pin the InfiniBand run for the compare step below.
        browser.js("document.getElementById('pin').click()")

        # 3. A micro-batch that cannot fit: the simulator's message next to the micro-batch control.
        browser.js("(function(){var e=document.getElementById('mb0'); e.value='4096';"
                   "e.dispatchEvent(new Event('input'));})()")
        browser.wait_for("document.body.dataset.status === 'error'", "the out-of-memory message")
        shown_at = browser.js("window.ptsim.error.shownAt")
        if shown_at != "phases.0.micro_batch":
            fail("the error is shown at {!r}, expected next to phases.0.micro_batch".format(shown_at))
        message = browser.js("(function(){var c=document.querySelector('.ctl[data-key=\"phases.0.micro_batch\"]');"
                             "var e=c.querySelector('.err'); return e.offsetParent !== null ? e.textContent : null;})()")
        code, out, err = cli_predict(ptsim, {"cluster.network": "ib-edr", "phases.0.micro_batch": 4096})
        if code != 2:
            fail("ptsim predict with micro-batch 4096 should be exit 2, got {}".format(code))
        cli_message = err.strip()[len("error: "):] if err.startswith("error: ") else err.strip()
        if message is None or message.strip() != cli_message:
            fail("the message next to the micro-batch control is {!r}; ptsim predict says {!r}".format(message, cli_message))
        if "does not fit" not in message:
            fail("the out-of-memory message does not say it does not fit: " + message)
        browser.screenshot(os.path.join(out_dir, "serve-error.png"))
        print("micro-batch 4096: the page shows the simulator's message next to the control")

        # 4. Compare: back to micro-batch 32 and to 10 GbE; the time is longer than the pinned InfiniBand run.
        browser.js("(function(){var e=document.getElementById('mb0'); e.value='32';"
                   "e.dispatchEvent(new Event('input'));})()")
        browser.wait_for("document.body.dataset.status === 'idle' && !('phases.0.micro_batch' in window.ptsim.last.request.set)",
                         "the prediction after the error")
        browser.js("(function(){var e=document.getElementById('network'); e.value='10gbe-tcp';"
                   "e.dispatchEvent(new Event('change'));})()")
        browser.wait_for("document.body.dataset.status === 'idle' && !('cluster.network' in window.ptsim.last.request.set)",
                         "the 10 GbE prediction")
        d_time = browser.js("document.getElementById('d-time').textContent")
        d_class = browser.js("document.getElementById('d-time').className")
        rise = 100 * (cli_10gbe - cli_ib) / cli_ib
        if "worse" not in d_class or "{:.1f}% vs pinned".format(rise) not in d_time:
            fail("against the pinned InfiniBand run the time should show +{:.1f}% (worse): got {!r} ({})".format(rise, d_time, d_class))
        browser.wait_for("window.ptsim.lastScaling !== null", "the scaling chart", timeout=20)
        time.sleep(0.2)
        browser.screenshot(os.path.join(out_dir, "serve-page.png"))
        print("compare: 10 GbE shows {!r} against the pinned InfiniBand run".format(d_time))

        # 5. The node menu: another node type answers with its own stack, not the T4 stack's error
        #    (docs/sweep.md, "Node-type what-ifs").
        for node, stack in (("dgx-a100", "pytorch-ngc20.06"), ("dgx-h100", "pytorch-2-sdpa")):
            browser.js("(function(){var e=document.getElementById('node'); e.value='" + node + "';"
                       "e.dispatchEvent(new Event('change'));})()")
            browser.wait_for("document.body.dataset.status === 'idle' && window.ptsim.last && "
                             "window.ptsim.last.request.set['cluster.node'] === '" + node + "'",
                             "the " + node + " prediction")
            got = browser.js("window.ptsim.last.prediction.stack")
            if got != stack:
                fail("node {}: the prediction's stack is {!r}, expected {!r}".format(node, got, stack))
        print("node menu: dgx-a100 and dgx-h100 predict under their own stacks")
    finally:
        if browser:
            browser.close()
        shutil.rmtree(profile, ignore_errors=True)
    stop_server(server)
    elapsed = time.time() - start
    if elapsed > DEADLINE_S:
        fail("the ui test took {:.0f} s, more than {} s".format(elapsed, DEADLINE_S))
    print("ui: 5 passed, 0 failed ({:.1f} s; screenshots in {})".format(elapsed, out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
