#!/usr/bin/env python3
"""Checks Package.swift against the code: every target imports exactly the project modules (and package
products) it declares, and the layering rules of docs/ARCHITECTURE.md hold for direct and indirect
dependencies. Exits 1 with one line per problem."""
import json
import pathlib
import re
import subprocess
import sys

# What a module may not depend on, directly or not: every row of docs/ARCHITECTURE.md's table ("may not know").
TRANSPORT = {"EventLoops", "HTTPServer", "GRPC"}
YAML = {"Configuration", "Yams"}
ABOVE_DOMAIN = {"Services", "Edge", "Tracing", "GatewayApp", "AppStoreGatewayCLI"}
DOMAIN = {
    "AppStoreDomain", "SignedData", "CallerAuthentication", "AppStoreClient", "NotificationStore", "Redis", "Postgres",
}
FORBIDDEN = {
    "GatewayFoundation": "every project module",
    "ProtoCodec": "every project module",
    "Metrics": "every project module but GatewayFoundation",
    "EventLoops": {"AppStoreDomain", "HTTPServer", "GRPC"} | YAML,
    "HTTPServer": {"AppStoreDomain", "GRPC"} | YAML,
    "GRPC": {"AppStoreDomain"} | YAML,
    "Cryptography": {"AppStoreDomain"} | YAML,
    "AppStoreDomain": {"Redis"} | TRANSPORT | YAML,
    "Redis": {"AppStoreDomain"} | TRANSPORT | YAML,
    # The PostgreSQL client knows no statement's meaning: no domain, no other store, no transport, no YAML.
    "Postgres": (DOMAIN - {"Postgres"}) | TRANSPORT | YAML | ABOVE_DOMAIN | {"Cryptography", "Simulator"},
    # The subscription-state reducer is pure: no transport, no configuration, no store, no Apple client.
    "SubscriptionState": TRANSPORT | YAML | ABOVE_DOMAIN
    | {"AppStoreClient", "NotificationStore", "Redis", "CSQLite", "Postgres", "CLibPQ"},
    "SignedData": TRANSPORT | YAML | ABOVE_DOMAIN,
    "CallerAuthentication": TRANSPORT | YAML | ABOVE_DOMAIN,
    "AppStoreClient": TRANSPORT | YAML | ABOVE_DOMAIN,
    "NotificationStore": TRANSPORT | YAML | ABOVE_DOMAIN,
    "Observability": DOMAIN | YAML | ABOVE_DOMAIN,
    "Services": YAML | {"Edge", "GatewayApp", "AppStoreGatewayCLI"},
    "Edge": YAML | {"GatewayApp", "AppStoreGatewayCLI"},
    "Tracing": DOMAIN | YAML | {"Services", "Edge", "GatewayApp", "AppStoreGatewayCLI"},
    "Simulator": YAML | ABOVE_DOMAIN | {"AppStoreClient", "SignedData", "NotificationStore"},
    "Configuration": {"GatewayApp", "AppStoreGatewayCLI"},
    "GatewayApp": {"AppStoreGatewayCLI"},
}
# What a module may not declare itself, though it reaches it through a module it uses (Services reaches the
# HTTP server only through GRPC's `HTTPServerStream`).
FORBIDDEN_DIRECT = {"Services": {"HTTPServer"}}
# The only modules (tests and their support targets aside) that may depend on Configuration: the composition
# root and the CLI.
CONFIGURATION_USERS = {"GatewayApp", "AppStoreGatewayCLI"}
IMPORT = re.compile(
    r"^\s*(?:@\w+(?:\(\w+\))?\s+)*(?:(?:public|package|internal|private|fileprivate)\s+)?import\s+(?:(?:struct|class|enum|func|protocol|var|let|typealias)\s+)?(\w+)",
    re.M)


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent
    package = json.loads(subprocess.check_output(["swift", "package", "dump-package"], cwd=root))
    products = {}
    for dependency in package["dependencies"]:
        identity = next(iter(dependency.values()))[0]["identity"]
        products[identity] = identity
    targets = {t["name"]: t for t in package["targets"]}
    declared = {}
    for name, target in targets.items():
        names = set()
        for dependency in target["dependencies"]:
            kind, value = next(iter(dependency.items()))
            names.add(value[0])
        declared[name] = names
    problems = []
    module_names = set(targets) | {"Yams", "Logging", "ArgumentParser"}
    for name, target in targets.items():
        if target["type"] == "system" or name.startswith("CGateway"):
            continue
        folder = root / (target.get("path") or ("Tests/" + name if target["type"] == "test" else "Sources/" + name))
        excluded = [folder / e for e in target.get("exclude", [])]
        imported = set()
        for source in folder.rglob("*.swift"):
            if any(source.is_relative_to(e) for e in excluded):
                continue
            imported |= {m for m in IMPORT.findall(source.read_text()) if m in module_names}
        imported.discard(name)
        if imported - declared[name]:
            problems.append(f"{name}: imports {sorted(imported - declared[name])} without declaring them")
        unused = {d for d in declared[name] - imported if d in module_names}
        if unused:
            problems.append(f"{name}: declares {sorted(unused)} but no file imports them")

    def closure(name, seen=None):
        seen = set() if seen is None else seen
        for dependency in declared.get(name, ()):
            if dependency not in seen:
                seen.add(dependency)
                closure(dependency, seen)
        return seen

    for name, forbidden in FORBIDDEN.items():
        reached = closure(name)
        if forbidden in ("every project module", "every project module but GatewayFoundation"):
            allowed = {"GatewayFoundation"} if forbidden.endswith("GatewayFoundation") else set()
            bad = {d for d in reached if d in targets and not re.match(r"C[A-Z]", d)} - allowed
        else:
            bad = reached & forbidden
        if bad:
            problems.append(f"{name}: depends on {sorted(bad)}, which it may not know")
    for name, forbidden in FORBIDDEN_DIRECT.items():
        if declared.get(name, set()) & forbidden:
            problems.append(f"{name}: declares {sorted(declared[name] & forbidden)}, which it may not use directly")
    for name, target in targets.items():
        is_test = target["type"] == "test" or (target.get("path") or "").startswith("Tests/")
        if "Configuration" in declared[name] and not is_test and name not in CONFIGURATION_USERS:
            problems.append(f"{name}: depends on Configuration; only {sorted(CONFIGURATION_USERS)} and tests may")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
