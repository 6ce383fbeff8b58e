#!/usr/bin/env python3
"""Checks the Kubernetes manifests of a HeterPS job (deploy/k8s).

Every YAML document parses and names its apiVersion, kind and name; the
kustomization's resources exist; every volume a pod mounts is declared
and every ConfigMap and PersistentVolumeClaim it names is one of the
manifests'; the PS StatefulSet sits behind a headless Service; every
heterps-run command line uses only options that `heterps-run --help` (or
`heterps-run serve --help`) lists; --ps names the StatefulSet's pods in
shard order and serve's --shard-count is its replica count; mpirun's -np
is the MPIJob's workers times their slots.

usage: check-manifests.py DIR --heterps-run PATH
Prints one line per problem, naming the file and the object, and exits 1
when there is any.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

import yaml


def help_options(binary, *sub):
    text = subprocess.run([binary, *sub, "--help"], check=True,
                          capture_output=True, text=True).stdout
    return set(re.findall(r"--([a-z0-9][a-z0-9-]*)", text))


def pod_specs(doc):
    """(where, pod spec) of every pod template of a workload."""
    kind = doc.get("kind")
    spec = doc.get("spec") or {}
    if kind in ("StatefulSet", "Deployment", "Job", "DaemonSet"):
        yield kind, (spec.get("template") or {}).get("spec") or {}
    elif kind == "MPIJob":
        for role, replica in (spec.get("mpiReplicaSpecs") or {}).items():
            yield role, ((replica or {}).get("template") or {}).get(
                "spec") or {}


def command_lines(container):
    """The container's command and args as lists of words; a `sh -c`
    script is split as the shell splits it."""
    words = list(container.get("command") or []) + list(
        container.get("args") or [])
    words = [str(w) for w in words]
    if len(words) >= 3 and os.path.basename(words[0]) in ("sh", "bash") \
            and words[1] == "-c":
        return [shlex.split(words[2])]
    return [words]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--heterps-run", required=True)
    args = parser.parse_args()
    problems = []
    run_options = help_options(args.heterps_run)
    serve_options = help_options(args.heterps_run, "serve")

    docs = []  # (file, doc)
    kustomization = None
    for name in sorted(os.listdir(args.dir)):
        if not name.endswith((".yaml", ".yml")):
            continue
        path = os.path.join(args.dir, name)
        try:
            with open(path) as f:
                loaded = [d for d in yaml.safe_load_all(f) if d is not None]
        except yaml.YAMLError as e:
            problems.append("%s: does not parse: %s" % (name, e))
            continue
        for doc in loaded:
            if not isinstance(doc, dict):
                problems.append("%s: a document is not a mapping" % name)
                continue
            if doc.get("kind") == "Kustomization":
                kustomization = (name, doc)
                continue
            meta = doc.get("metadata") or {}
            if not doc.get("apiVersion") or not doc.get("kind") or \
                    not meta.get("name"):
                problems.append("%s: a document lacks apiVersion, kind or "
                                "metadata.name" % name)
                continue
            docs.append((name, doc))

    def named(kind):
        return {d["metadata"]["name"]: (f, d) for f, d in docs
                if d["kind"] == kind}
    services, statefulsets = named("Service"), named("StatefulSet")
    claims = set(named("PersistentVolumeClaim"))
    configmaps = set(named("ConfigMap"))
    secrets = set(named("Secret"))
    if kustomization:
        kfile, k = kustomization
        for resource in k.get("resources") or []:
            if not os.path.exists(os.path.join(args.dir, resource)):
                problems.append("%s: resource %s does not exist" %
                                (kfile, resource))
        for generator in k.get("configMapGenerator") or []:
            configmaps.add(generator.get("name"))
        for generator in k.get("secretGenerator") or []:
            secrets.add(generator.get("name"))

    for name, (f, sts) in statefulsets.items():
        service = sts["spec"].get("serviceName")
        if service not in services:
            problems.append("%s: StatefulSet %s: serviceName %s is not a "
                            "Service of the manifests" % (f, name, service))
        elif services[service][1]["spec"].get("clusterIP") != "None":
            problems.append("%s: StatefulSet %s: Service %s is not headless "
                            "(clusterIP: None)" % (f, name, service))

    invocations = 0
    for f, doc in docs:
        for where, pod in pod_specs(doc):
            label = "%s %s %s" % (doc["kind"], doc["metadata"]["name"],
                                  where)
            volumes = {}
            for volume in pod.get("volumes") or []:
                volumes[volume.get("name")] = volume
                if "configMap" in volume and \
                        volume["configMap"].get("name") not in configmaps:
                    problems.append("%s: %s: ConfigMap %s is not one of the "
                                    "manifests'" % (f, label,
                                                    volume["configMap"].get(
                                                        "name")))
                secret = (volume.get("secret") or {}).get("secretName")
                if secret is not None and secret not in secrets:
                    problems.append("%s: %s: Secret %s is not one of the "
                                    "manifests'" % (f, label, secret))
                claim = (volume.get("persistentVolumeClaim") or {}).get(
                    "claimName")
                if claim is not None and claim not in claims:
                    problems.append("%s: %s: PersistentVolumeClaim %s is not "
                                    "one of the manifests'" % (f, label,
                                                                claim))
            for container in pod.get("containers") or []:
                for mount in container.get("volumeMounts") or []:
                    if mount.get("name") not in volumes:
                        problems.append("%s: %s: container %s mounts volume "
                                        "%s, which the pod does not declare"
                                        % (f, label, container.get("name"),
                                           mount.get("name")))
                for words in command_lines(container):
                    invocations += check_command(f, label, doc, words,
                                                 run_options, serve_options,
                                                 statefulsets, services,
                                                 problems)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print("checked %d manifests, %d heterps-run command lines: OK" %
          (len(docs), invocations))
    return 0


def check_command(f, label, doc, words, run_options, serve_options,
                  statefulsets, services, problems):
    found = 0
    for i, word in enumerate(words):
        if os.path.basename(word) != "heterps-run":
            continue
        found += 1
        rest = words[i + 1:]
        serve = rest[:1] == ["serve"]
        allowed = serve_options if serve else run_options
        options = {}
        for token in rest:
            if not token.startswith("--"):
                continue
            key, _, value = token[2:].partition("=")
            options[key] = value
            if key not in allowed:
                problems.append("%s: %s: heterps-run%s has no option --%s" %
                                (f, label, " serve" if serve else "", key))
        if serve:
            for name, (_, sts) in statefulsets.items():
                count = options.get("shard-count")
                if doc is sts and count != str(sts["spec"].get("replicas")):
                    problems.append("%s: %s: --shard-count=%s, the "
                                    "StatefulSet has %s replicas" %
                                    (f, label, count,
                                     sts["spec"].get("replicas")))
            continue
        if "ps" in options:
            servers = options["ps"].split(",")
            for name, (_, sts) in statefulsets.items():
                service = sts["spec"].get("serviceName")
                replicas = sts["spec"].get("replicas")
                ours = [s for s in servers
                        if s.split(":")[0].split(".")[0].startswith(name)]
                if not ours:
                    continue
                expected = ["%s-%d.%s" % (name, r, service)
                            for r in range(replicas)]
                hosts = [".".join(s.split(":")[0].split(".")[:2])
                         for s in servers]
                if hosts != expected:
                    problems.append("%s: %s: --ps names %s; the PS pods in "
                                    "shard order are %s" %
                                    (f, label, ",".join(hosts),
                                     ",".join(expected)))
        if doc["kind"] == "MPIJob" and "-np" in words[:i]:
            np = words[words.index("-np") + 1]
            spec = doc["spec"]
            workers = (spec["mpiReplicaSpecs"].get("Worker") or {}).get(
                "replicas", 0) * spec.get("slotsPerWorker", 1)
            if str(np) != str(workers):
                problems.append("%s: %s: mpirun -np %s, the MPIJob has %d "
                                "worker slots" % (f, label, np, workers))
    return found


if __name__ == "__main__":
    sys.exit(main())
