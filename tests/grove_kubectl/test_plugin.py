"""`kubectl grove` as kubectl runs it: flags, output formats, colour, top, convert, and the published schema."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_kubectl.output import TopOutput, TreeOutput, WhyOutput, json_schema

from ._cluster import BIN, EXAMPLES, KUBECTL, ROOT, Run, wait_until

pytestmark = pytest.mark.kubectl

Obj = dict[str, Any]


def _bound(kubectl: Run, selector: str, count: int) -> list[Obj] | None:
    pods = json.loads(kubectl("get", "pods", "-l", selector, "-o", "json").stdout)["items"]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    return live if len(live) == count and all(p["spec"].get("nodeName") for p in live) else None


def _same_pod(pod: Obj) -> Obj:
    """What must be equal between a PodGangSet pod and its converted PodCliqueSet pod (names aside)."""
    spec = pod["spec"]
    containers = [{k: c[k] for k in ("image", "resources")} for c in spec["containers"]]
    return {"containers": containers, "affinity": spec.get("affinity"), "scheduler": spec["schedulerName"]}


def test_convert_output_applies_and_yields_the_same_pods(grove: Run, tmp_path: Path) -> None:
    """The PodCliqueSet printed for the examples (one file, PodClique first) is accepted by the API server and
    the operator's webhooks, and its pods match the PodGangSet's: containers, resources, affinity, scheduler."""
    both = tmp_path / "first-api.yaml"
    both.write_text((EXAMPLES / "podclique.yaml").read_text() + "---\n" + (EXAMPLES / "podgangset.yaml").read_text())
    grove("apply", "-f", str(both))
    original = wait_until(lambda: _bound(grove, "grove.dynamo.ai/podgangset=prefill-gang", 6), "PodGangSet pods")
    converted = grove("grove", "convert", "-f", str(both)).stdout
    pcs = yaml.safe_load(converted)
    assert (pcs["apiVersion"], pcs["kind"]) == ("grove.io/v1alpha1", "PodCliqueSet")
    (clique,) = pcs["spec"]["template"]["cliques"]
    assert (clique["spec"]["replicas"], clique["spec"]["minAvailable"]) == (6, 6)
    renamed = converted.replace("name: prefill-gang", "name: converted")

    def applied() -> bool:
        return grove("apply", "-f", "-", input=renamed, check=False).returncode == 0

    wait_until(applied, "the operator's webhooks to admit the PodCliqueSet")
    made = wait_until(lambda: _bound(grove, "app.kubernetes.io/part-of=converted", 6), "PodCliqueSet pods")
    assert isinstance(original, list)
    assert isinstance(made, list)
    assert {json.dumps(_same_pod(p), sort_keys=True) for p in made} == {
        json.dumps(_same_pod(p), sort_keys=True) for p in original
    }
    as_json = json.loads(grove("grove", "convert", "-f", str(both), "-o", "json").stdout)
    assert as_json == pcs
    missing = grove("grove", "convert", "-f", str(tmp_path / "nope.yaml"), check=False)
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: ")


def test_tree_of_a_podcliqueset_and_namespace_flags(grove: Run) -> None:
    """`tree pcs/NAME` shows replica → PodClique → pods and the PodGang; -n and --namespace= select the namespace,
    the context's namespace is the default, and -A is refused for a command about one object."""
    tree = TreeOutput.model_validate_json(grove("grove", "tree", "pcs/converted", "-o", "json").stdout)
    assert tree.root.kind == "PodCliqueSet"
    (replica,) = tree.root.children
    kinds = [c.kind for c in replica.children]
    assert kinds == ["PodClique", "PodGang"]
    assert len(replica.children[0].children) == 6
    assert grove("grove", "tree", "pcs/converted", "--namespace=default", "-o", "yaml").stdout.startswith("kind: Tree")
    missing = grove("grove", "tree", "pcs/converted", "-n", "elsewhere", check=False)
    assert missing.returncode == 1
    assert 'not found in namespace "elsewhere"' in missing.stderr
    refused = grove("grove", "tree", "pcs/converted", "-A", check=False)
    assert refused.returncode == 1
    grove("create", "namespace", "team")
    grove("config", "set-context", "team", "--cluster=grove-sim", "--user=grove-sim", "--namespace=team", check=False)
    contexts = grove("config", "get-contexts", "-o", "name").stdout.split()
    context = next(c for c in contexts if c != "team")
    cluster = json.loads(grove("config", "view", "-o", "json").stdout)["contexts"]
    entry = next(c for c in cluster if c["name"] == context)["context"]
    grove(
        "config", "set-context", "team", f"--cluster={entry['cluster']}", f"--user={entry['user']}", "--namespace=team"
    )
    in_team = grove("grove", "tree", "pcs/converted", "--context", "team", check=False)
    assert 'not found in namespace "team"' in in_team.stderr


def test_top_counts_every_gpu_and_why_reports_a_running_gang(grove: Run) -> None:
    """`top` adds up every bound pod's GPUs per rack (background pods, the PodGangSet and the converted
    PodCliqueSet) and -o json matches the text; `why` on a running gang says it runs."""
    top = TopOutput.model_validate_json(grove("grove", "top", "-A", "-o", "json").stdout)
    assert top.levels == ["rack"]
    assert top.gpus.allocatable == 40
    racks = {d.name: d.gpus.used for d in top.domains}
    assert sum(racks.values()) == top.gpus.used == 5 + 5 + 1 + 2 + 6 + 6
    text = grove("grove", "top").stdout.splitlines()
    assert text[0].split() == ["DOMAIN", "NODES", "GPUS", "USED", "USE"]
    assert text[-1].startswith(f"cluster: {top.gpus.used}/40 GPUs used")
    why = WhyOutput.model_validate_json(grove("grove", "why", "pcs/converted", "-o", "json").stdout)
    assert why.running
    assert why.reasons == []


def test_colour_only_on_a_terminal(grove: Run, tmp_path: Path) -> None:
    """Run through a pseudo-terminal, `top` colours its cells; piped (every other test), it prints no escapes."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    kubeconfig = grove("config", "view", "--raw", "-o", "json").stdout
    path = tmp_path / "kubeconfig.json"
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", KUBECONFIG=str(path), NO_PROXY="127.0.0.1,localhost")
    path.write_text(kubeconfig)
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([KUBECTL, "grove", "top"], stdout=secondary, stderr=secondary, env=env)
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(primary)
    assert b"\033[" in b"".join(chunks)


def test_published_schema_is_what_the_models_say() -> None:
    """docs/kubectl-grove.schema.json is generated from the output models (`python -m grove_kubectl.output`)."""
    on_disk = json.loads((ROOT / "docs" / "kubectl-grove.schema.json").read_text())
    assert on_disk == json.loads(json.dumps(json_schema()))
