"""torchrun across hosts: two emulated hosts (network namespaces on a bridge, as the netns tests
make them), two ranks each, torchrun's c10d rendezvous on host 0 (docs/pytorch.md, "Launching").
DDP trains over Braid and over gloo from the same data; the parameters agree up to summation
order (max |diff| <= 1e-6)."""

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="BRAID-TORCH-SKIP: torch is not installed")

from torch_ranks import free_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "hosts_worker.py")
HOSTS, PER_HOST = 2, 2
TORCH = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


def _ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def hosts():
    """Namespaces h0, h1 on a bridge in a hub namespace, 10.214.0.<i+1>/24; removed after."""
    tag = f"bt{os.getpid() % 100000}"
    hub, names = f"{tag}hub", [f"{tag}h{i}" for i in range(HOSTS)]
    try:
        for ns in [hub] + names:
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", hub, "link", "set", "br0", "up")
        for i, ns in enumerate(names):
            _ip("-n", hub, "link", "add", f"port{i}", "type", "veth", "peer", "name", "eth0",
                "netns", ns)
            _ip("-n", hub, "link", "set", f"port{i}", "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"10.214.0.{i + 1}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
    except (subprocess.CalledProcessError, FileNotFoundError) as e:
        for ns in [hub] + names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        detail = getattr(e, "stderr", "") or str(e)
        pytest.fail(f"cannot make network namespaces (root and iproute2 needed): {detail}")
    yield names
    for ns in [hub] + names:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _train(names, backend, out):
    port = free_port()
    # gloo takes the address the host name resolves to (127.0.0.1 in a namespace) unless told
    # the interface; Braid finds the namespace's one interface itself.
    env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="eth0")
    procs = []
    for i, ns in enumerate(names):
        cmd = ["ip", "netns", "exec", ns, sys.executable, "-m", "torch.distributed.run",
               "--nnodes", str(HOSTS), "--nproc-per-node", str(PER_HOST),
               "--rdzv-backend", "c10d", "--rdzv-endpoint", f"10.214.0.1:{port}",
               "--rdzv-id", f"hosts-{backend}", "--local-addr", f"10.214.0.{i + 1}"]
        if i == 0:
            cmd += ["--rdzv-conf", "is_host=1"]  # this node serves the rendezvous store
        cmd += [WORKER, "--backend", backend, "--out", str(out)]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outputs = []
    for p in procs:
        try:
            outputs.append(p.communicate(timeout=180)[0])
        except subprocess.TimeoutExpired:
            p.kill()
            outputs.append(p.communicate()[0])
    for p, output in zip(procs, outputs):
        assert p.returncode == 0, f"torchrun over {backend} exited {p.returncode}:\n{output}"
    joined = "".join(outputs)
    for r in range(HOSTS * PER_HOST):
        assert f"rank {r} of {HOSTS * PER_HOST} on" in joined, joined
    return torch.load(out)


def test_torchrun_across_two_hosts(hosts, tmp_path):
    if TORCH < (2, 0):
        pytest.skip("BRAID-TORCH-SKIP: torchrun's --local-addr and c10d rendezvous across "
                    "namespaces need this torch's successor (2.x); the torch2 flavour runs it")
    braid = _train(hosts, "braid", tmp_path / "braid.pt")
    gloo = _train(hosts, "gloo", tmp_path / "gloo.pt")
    worst = max(float((a - b).abs().max()) for a, b in zip(braid, gloo))
    print(f"max |braid - gloo| over the parameters: {worst:.3g}")
    assert worst <= 1e-6, worst
