"""Extracts the GraphQL documents one wandb SDK version can send for what this service serves.

The documents come from the SDK itself, never typed by hand: wandb-core's (Go) documents are read
out of the `wandb-core` binary of the wheel (genqlient keeps each one as a string constant), the
Python side's are the SDK's gql constants, and the few it composes at run time (the Run and Runs
queries, history queries, login probes, useArtifact) are captured by calling the SDK's own code
with a stand-in transport that records the document and stops. Where the SDK trims a document
for older servers (omitted fields or variables), the full document is kept: the served schema
must accept all of it.

Run it with a Python that can import that wheel's `wandb` (its dependencies installed), e.g.:

    python3.11 -m venv /tmp/wb031 && /tmp/wb031/bin/pip install wandb==0.31.0
    /tmp/wb031/bin/pip download wandb==0.31.0 --no-deps -d /tmp/whl && unzip -q /tmp/whl/*.whl -d /tmp/wheel031
    PYTHONPATH=/tmp/wheel031 /tmp/wb031/bin/python test/wandb/sdk-documents/extract.py \
        --wheel /tmp/wheel031 --out test/wandb/sdk-documents/0.31.0

(`--wheel` is the unpacked wheel: its `wandb/bin/wandb-core` is read, and `wandb` must import
from it.) Every file it writes is named after the operation and starts with two comment lines:
where in the SDK the document is and what sends it. The files of `--out` are replaced.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

# ---------------------------------------------------------------------------------------------
# wandb-core's documents: genqlient string constants in the Go binary ("\nquery Name (...) {")


def core_documents(binary: Path) -> dict[str, str]:
    data = binary.read_bytes().decode("latin-1")
    found: dict[str, str] = {}
    for match in re.finditer(r"\n(query|mutation) ([A-Za-z0-9_]+) ?[({]", data):
        end = _balanced_end(data, data.index("{", match.end() - 1))
        # Fragments the operation uses follow it in the same constant.
        while fragment := re.match(r"\s*fragment [A-Za-z0-9_]+ on [A-Za-z0-9_]+ ?\{", data[end : end + 400]):
            end = _balanced_end(data, end + fragment.end() - 1)
        found.setdefault(match.group(2), data[match.start() : end].strip("\n") + "\n")
    return found


def _balanced_end(text: str, brace: int) -> int:
    depth, i, in_string = 0, brace, False
    while i < len(text):
        c = text[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced document in wandb-core")


# ---------------------------------------------------------------------------------------------
# Python documents: constants, and documents captured from the SDK's own code


class NotInVersion(Exception):
    """The SDK version has no such constant, function or method (the document is not in it)."""


def lookup(owner: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not hasattr(owner, part):
            raise NotInVersion(dotted)
        owner = getattr(owner, part)
    return owner


def module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        raise NotInVersion(name) from error


class Captured(BaseException):
    """The document the SDK sent (a BaseException: the SDK's own error wrappers let it through)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def text_of(document: Any) -> str:
    """A document as the SDK wrote it: a string, or (0.25) a parsed wandb_gql Document."""
    if isinstance(document, str):
        return document
    return document.loc.source.body


# What the introspection probes of older SDKs (ProbeRunInput, ProbeProjectInput) hear: every
# field exists, so the SDK composes its fullest document.
PROBE_ANSWER = {
    "RunType": {"fields": [{"name": "projectId"}]},
    "ProjectType": {"fields": [{"name": "internalId"}]},
    "QueryType": {"fields": []},
}


def recorder(want_probe: bool) -> Callable[..., Any]:
    """A transport that stops at the first document (an introspection probe only if `want_probe`;
    other probes are answered)."""

    def execute(document: Any, *args: Any, **kwargs: Any) -> Any:
        text = text_of(document)
        if "__type(" in text and not want_probe:
            return PROBE_ANSWER
        raise Captured(text)

    return execute


def capture(call: Callable[[Callable[..., Any]], Any], want_probe: bool) -> str:
    """Runs `call(execute)` and returns the document it sent."""
    try:
        call(recorder(want_probe))
    except Captured as captured:
        return captured.text
    raise RuntimeError("the SDK sent no document")


def fake_run(execute: Callable[..., Any]) -> types.SimpleNamespace:
    """Just enough of a public-API Run for its query methods (0.25: client; 0.28+: _exec)."""
    client = types.SimpleNamespace(execute=execute)
    return types.SimpleNamespace(
        entity="e", project="p", id="r", _attrs={}, client=client, _is_loaded=False,
        _server_provides_project_id_field=None, _service_api=types.SimpleNamespace(execute_graphql=execute),
        _exec=lambda query, **kwargs: execute(query), _include_sweeps=False,
    )


def fake_internal_api(execute: Callable[..., Any]) -> types.SimpleNamespace:
    """Just enough of the InternalApi (0.25, 0.28) for its query methods."""
    return types.SimpleNamespace(
        gql=execute, execute=execute, settings=lambda key: "x", current_run_id="r",
        _server_supports=lambda feature: True, query_types=None, mutation_types=None, server_info_types=None,
        # What a server with every optional field answers (viewer_server_info then asks for them all).
        server_info_introspection=lambda: (["serverInfo"], ["cliVersionInfo", "latestLocalVersionInfo"], []),
        server_use_artifact_input_info=None, server_use_artifact_input_introspection=lambda: ["usedAs"],
    )


def runs_module() -> Any:
    return module("wandb.apis.public.runs")


def internal_api_class() -> Optional[type]:
    try:
        return module("wandb.sdk.internal.internal_api").Api
    except NotInVersion:
        return None  # 0.31: wandb-core does login and the viewer probes


def run_query(lazy: bool) -> Callable[[Callable[..., Any]], Any]:
    def call(execute: Callable[..., Any]) -> Any:
        runs = runs_module()
        fragment, name = (runs.LIGHTWEIGHT_RUN_FRAGMENT, runs.LIGHTWEIGHT_RUN_FRAGMENT_NAME) if lazy else (runs.RUN_FRAGMENT, runs.RUN_FRAGMENT_NAME)
        return runs.Run._load_with_fragment(fake_run(execute), fragment, name, True)

    return call


def runs_query(lazy: bool) -> Callable[[Callable[..., Any]], Any]:
    def call(execute: Callable[..., Any]) -> Any:
        runs = runs_module()
        try:
            document = runs._create_runs_query(lazy=lazy)
        except TypeError:  # 0.25: the caller passes what its probes found
            document = runs._create_runs_query(lazy=lazy, with_internal_id=True, with_project_id=True)
        return execute(document)

    return call


def run_method(method: str, **kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
    def call(execute: Callable[..., Any]) -> Any:
        target = lookup(runs_module().Run, method)
        if isinstance(target, property):
            return target.fget(fake_run(execute))
        return target(fake_run(execute), **kwargs)

    return call


def probe(function: str) -> Callable[[Callable[..., Any]], Any]:
    """0.25's introspection probes of the public API."""

    def call(execute: Callable[..., Any]) -> Any:
        return lookup(runs_module(), function)(types.SimpleNamespace(execute=execute))

    return call


def internal(method: str, *args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
    def call(execute: Callable[..., Any]) -> Any:
        api = internal_api_class()
        if api is None:
            raise NotInVersion(method)
        result = lookup(api, method)(fake_internal_api(execute), *args, **kwargs)
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
            execute(result[0])  # a builder: (query, variables)
        return result

    return call


def record_use(execute: Callable[..., Any]) -> Any:
    """useArtifact, with every optional variable (usedAs, artifact entity and project)."""
    api = internal_api_class()
    if api is not None and hasattr(api, "_construct_use_artifact_query"):
        return internal("_construct_use_artifact_query", "id", "e", "p", "r", "used-as", "ae", "ap")(execute)
    gqlutils = module("wandb.sdk.artifacts._gqlutils")
    service_api = types.SimpleNamespace(execute_graphql=execute, feature_enabled=lambda feature: True)
    return lookup(gqlutils, "record_artifact_use")(service_api, artifact_id="id", entity_name="e", project_name="p", run_name="r", use_as="used-as")


def constant(module_name: str, name: str) -> Callable[[Callable[..., Any]], Any]:
    def call(execute: Callable[..., Any]) -> Any:
        return execute(lookup(module(module_name), name))

    return call


# ---------------------------------------------------------------------------------------------
# What is extracted: each document's file name, where it is looked for (in order; the first
# that exists in this version wins), and what sends it.


@dataclass(frozen=True)
class Source:
    where: str
    get: Optional[Callable[[Callable[..., Any]], Any]] = None  # None: wandb-core, `where` is the operation
    is_probe: bool = False  # the document is itself an introspection probe


def core(operation: str) -> Source:
    return Source(operation)


def py(where: str, get: Callable[[Callable[..., Any]], Any], is_probe: bool = False) -> Source:
    return Source(where, get, is_probe)


ARTIFACT_OPS = "wandb.sdk.artifacts._generated.operations"
APIS_OPS = "wandb.apis._generated.operations"
INTERNAL_OPS = "wandb.sdk.internal._generated.operations"


def const(module: str, name: str, where: str) -> Source:
    return py(f"{module.replace('.', '/')}.py {name} ({where})", constant(module, name))


DOCUMENTS: list[tuple[str, list[Source], str]] = [
    # --- login, viewer, server probes ---------------------------------------------------------
    ("ValidateApiKey", [py("wandb/sdk/internal/internal_api.py Api.validate_api_key", internal("validate_api_key"))],
     "wandb.login(key=...) (wandb_login._verify_login); an anonymous `query { viewer { id } }`."),
    ("ProbeServerCapabilities", [py("wandb/sdk/internal/internal_api.py Api.server_info_introspection", internal("server_info_introspection"), is_probe=True)],
     "wandb.login / wandb.init (Server.viewer -> viewer_server_info), before the Viewer query."),
    ("Viewer.python", [py("wandb/sdk/internal/internal_api.py Api.viewer_server_info", internal("viewer_server_info"))],
     "wandb.login / wandb.init: the viewer and the server's version info (wandb/sdk/lib/server.py)."),
    ("Viewer", [core("Viewer")],
     "wandb-core: checking the API key on wandb.init / wandb.login (0.31: wandb.login's verification, ServiceApi.authenticate)."),
    ("ServerFeaturesQuery", [core("ServerFeaturesQuery")],
     "wandb-core: first request of every run stream and of the public API (feature flags)."),
    ("ServerFeaturesQuery.public", [const(INTERNAL_OPS, "SERVER_FEATURES_QUERY_GQL", "wandb/sdk/artifacts/_gqlutils.py server_features")],
     "Python public API: api.artifact() and artifact.download() (0.25; later versions ask wandb-core)."),
    ("GetViewer", [const(APIS_OPS, "GET_VIEWER_GQL", "wandb/apis/public/api.py Api.viewer")],
     "wandb.Api().viewer (and the Api constructor's error-reporting setup when enabled)."),
    ("GetDefaultEntity", [const(APIS_OPS, "GET_DEFAULT_ENTITY_GQL", "wandb/apis/public/api.py Api.default_entity")],
     "api.default_entity; api.run()/api.artifact()/api.runs() paths without an entity."),
    ("OrganizationCoreWeaveOrganizationID", [core("OrganizationCoreWeaveOrganizationID")],
     "wandb-core on wandb.init (system monitor: is this entity on CoreWeave); errors are ignored."),
    # --- runs ----------------------------------------------------------------------------------
    ("UpsertBucket", [core("UpsertBucket")],
     "wandb.init (new or resumed run), config/summary/tag updates, run.finish."),
    ("RunResumeStatus", [core("RunResumeStatus")],
     "wandb.init(resume='allow'|'must'|'auto', id=...)."),
    ("CreateRunFiles", [core("CreateRunFiles")],
     "run.finish / run.save: upload URLs of run files (config.yaml, wandb-summary.json, output.log, ...)."),
    ("ProbeRunInput", [py("wandb/apis/public/runs.py _server_provides_project_id_for_run", probe("_server_provides_project_id_for_run"), is_probe=True)],
     "api.run(path) (0.25), before the Run query: does Run have projectId?"),
    ("ProbeProjectInput", [py("wandb/apis/public/runs.py _server_provides_internal_id_for_project", probe("_server_provides_internal_id_for_project"), is_probe=True)],
     "api.runs(path) (0.25), before the Runs query: does Project have internalId?"),
    ("Run", [py("wandb/apis/public/runs.py Run._load_with_fragment (RUN_FRAGMENT)", run_query(lazy=False))],
     "api.run(path) and run.load(); run.config and run.summary read what it returns."),
    ("Run.lightweight", [py("wandb/apis/public/runs.py Run._load_with_fragment (LIGHTWEIGHT_RUN_FRAGMENT)", run_query(lazy=True))],
     "a lazily listed run (api.runs(lazy=True)) loading itself."),
    ("Runs", [py("wandb/apis/public/runs.py _create_runs_query(lazy=True)", runs_query(lazy=True))],
     "api.runs(path) (lazy by default), one request per page."),
    ("Runs.full", [py("wandb/apis/public/runs.py _create_runs_query(lazy=False)", runs_query(lazy=False))],
     "api.runs(path, lazy=False), and a lazy listing loading its runs' config/summary."),
    ("RunHistoryKeys", [py("wandb/apis/public/runs.py Run.lastHistoryStep", run_method("lastHistoryStep"))],
     "run.scan_history(): the last step (historyKeys.lastStep) bounds the scan."),
    ("RunFullHistory", [py("wandb/apis/public/runs.py Run._full_history", run_method("_full_history"))],
     "run.history() without keys (pandas or not): sampled rows as JSON text."),
    ("RunSampledHistory", [py("wandb/apis/public/runs.py Run._sampled_history", run_method("_sampled_history", keys=["loss"]))],
     "run.history(keys=[...])."),
    ("HistoryPage.python", [const("wandb.apis.public.history", "HistoryScan.QUERY", "wandb/apis/public/history.py HistoryScan")],
     "run.scan_history() without keys (0.25): pages of rows by step."),
    ("SampledHistoryPage.python", [const("wandb.apis.public.history", "SampledHistoryScan.QUERY", "wandb/apis/public/history.py SampledHistoryScan")],
     "run.scan_history(keys=[...]) (0.25)."),
    ("RunParquetHistory", [core("RunParquetHistory")],
     "wandb-core: run.scan_history() (0.28+; 0.25: run.beta_scan_history()): the run's parquet history files and the steps not in them."),
    ("HistoryPage", [core("HistoryPage")],
     "wandb-core: run.scan_history() (0.28+; 0.25: run.beta_scan_history()) without keys, for steps the parquet files lack (live data)."),
    ("SampledHistoryPage", [core("SampledHistoryPage")],
     "wandb-core: run.scan_history(keys=[...]) (0.28+; 0.25: run.beta_scan_history()), for steps the parquet files lack (live data)."),
    # --- logging an artifact -------------------------------------------------------------------
    ("ArtifactType", [const(ARTIFACT_OPS, "ARTIFACT_TYPE_GQL", "wandb/sdk/artifacts/artifact.py Artifact._expected_type")],
     "run.log_artifact / run.use_artifact: the type of the collection's latest version."),
    ("InputFields", [core("InputFields")],
     "wandb-core before each CreateArtifact (0.25): which CreateArtifactInput fields the server has."),
    ("CreateArtifact", [core("CreateArtifact")], "run.log_artifact (wandb-core)."),
    ("CreateArtifactManifest", [core("CreateArtifactManifest")],
     "run.log_artifact (wandb-core): twice, a placeholder then the manifest with its digest."),
    ("UpdateArtifactManifest", [core("UpdateArtifactManifest")],
     "run.log_artifact (wandb-core) of an incremental artifact (a new version from a base)."),
    ("CreateArtifactFiles", [core("CreateArtifactFiles")], "run.log_artifact (wandb-core): upload URLs, in batches."),
    ("CompleteMultipartUploadArtifact", [core("CompleteMultipartUploadArtifact")],
     "run.log_artifact (wandb-core): only for files of 2 GiB or more answered with multipart URLs."),
    ("CommitArtifact", [core("CommitArtifact")], "run.log_artifact (wandb-core), after the manifest upload."),
    ("ClientIDMapping", [core("ClientIDMapping")],
     "run.log_artifact (wandb-core) of a manifest that references another artifact by client id."),
    ("UseArtifact", [core("UseArtifact")],
     "run.use_artifact(artifact) of an artifact logged in the same call (wandb-core, use after commit)."),
    ("ProbeServerUseArtifactInput", [py("wandb/sdk/internal/internal_api.py Api.server_use_artifact_input_introspection", internal("server_use_artifact_input_introspection"), is_probe=True)],
     "run.use_artifact('name:alias') (0.25), before UseArtifact: does UseArtifactInput have usedAs?"),
    ("UseArtifact.python", [py("wandb/sdk/internal/internal_api.py Api._construct_use_artifact_query / wandb/sdk/artifacts/_gqlutils.py record_artifact_use", record_use)],
     "run.use_artifact('name:alias') (with every optional variable)."),
    ("ArtifactByID", [const(ARTIFACT_OPS, "ARTIFACT_BY_ID_GQL", "wandb/sdk/artifacts/artifact.py Artifact._from_id / _populate_after_save")],
     "artifact.wait() after run.log_artifact; api.artifact by id."),
    # --- reading artifacts ---------------------------------------------------------------------
    ("ArtifactByName", [const(ARTIFACT_OPS, "ARTIFACT_BY_NAME_GQL", "wandb/sdk/artifacts/artifact.py Artifact._from_name")],
     "api.artifact(name, type) / run.use_artifact(name) when PROJECT_ARTIFACT_COLLECTION_MEMBERSHIP is off (0.25, 0.28)."),
    ("ArtifactMembershipByName", [const(ARTIFACT_OPS, "ARTIFACT_MEMBERSHIP_BY_NAME_GQL", "wandb/sdk/artifacts/artifact.py Artifact._membership_from_name / _from_name")],
     "api.artifact(name, type) / run.use_artifact(name): always from 0.31, with the feature on before."),
    ("FetchArtifactManifest", [const(ARTIFACT_OPS, "FETCH_ARTIFACT_MANIFEST_GQL", "wandb/sdk/artifacts/artifact.py Artifact._fetch_manifest")],
     "artifact.download() / artifact.manifest; then a GET of currentManifest.file.directUrl."),
    ("GetArtifactFileUrls", [const(ARTIFACT_OPS, "GET_ARTIFACT_FILE_URLS_GQL", "wandb/sdk/artifacts/artifact.py Artifact._fetch_file_urls")],
     "artifact.download() when ARTIFACT_COLLECTION_MEMBERSHIP_FILES is off (0.25, 0.28)."),
    ("GetArtifactMembershipFileUrls", [const(ARTIFACT_OPS, "GET_ARTIFACT_MEMBERSHIP_FILE_URLS_GQL", "wandb/sdk/artifacts/artifact.py Artifact._fetch_file_urls")],
     "artifact.download(): always from 0.31, with the feature on before."),
    ("GetArtifactFiles", [const(ARTIFACT_OPS, "ARTIFACT_MEMBERSHIP_FILES_GQL", "wandb/apis/public/artifacts.py ArtifactFiles"),
                          const(ARTIFACT_OPS, "GET_ARTIFACT_FILES_GQL", "wandb/apis/public/artifacts.py ArtifactFiles")],
     "artifact.files() and a download URL refreshed after it expired (storage policy load_file)."),
    ("ArtifactManifest", [core("ArtifactManifest")],
     "wandb-core's artifact downloader (artifact.download() inside a run, when wandb-core downloads)."),
    ("ArtifactFileURLsByManifestEntries", [core("ArtifactFileURLsByManifestEntries")],
     "wandb-core's artifact downloader: download URLs for a batch of manifest entries."),
    ("ProjectArtifacts", [const(ARTIFACT_OPS, "PROJECT_ARTIFACTS_GQL", "wandb/apis/public/artifacts.py Artifacts")],
     "iterating api.artifacts(type, 'entity/project/name'): one request per page."),
    ("ArtifactCreatedBy", [const(ARTIFACT_OPS, "ARTIFACT_CREATED_BY_GQL", "wandb/sdk/artifacts/artifact.py Artifact.logged_by")],
     "artifact.logged_by()."),
    ("ArtifactUsedBy", [const(ARTIFACT_OPS, "ARTIFACT_USED_BY_GQL", "wandb/sdk/artifacts/artifact.py Artifact.used_by")],
     "artifact.used_by()."),
    # --- changing artifacts --------------------------------------------------------------------
    ("UpdateArtifact", [const(ARTIFACT_OPS, "UPDATE_ARTIFACT_GQL", "wandb/sdk/artifacts/artifact.py Artifact._update")],
     "artifact.save() of a logged artifact (metadata, description, ...)."),
    ("AddAliases", [const(ARTIFACT_OPS, "ADD_ALIASES_GQL", "wandb/sdk/artifacts/artifact.py Artifact._add_aliases")],
     "artifact.save() after aliases were added."),
    ("DeleteAliases", [const(ARTIFACT_OPS, "DELETE_ALIASES_GQL", "wandb/sdk/artifacts/artifact.py Artifact._delete_aliases")],
     "artifact.save() after aliases were removed."),
    ("LinkArtifact.python", [const(ARTIFACT_OPS, "LINK_ARTIFACT_GQL", "wandb/sdk/artifacts/artifact.py Artifact.link")],
     "artifact.link(target_path, aliases)."),
    ("LinkArtifact", [core("LinkArtifact")], "run.link_artifact(artifact, target_path) (wandb-core)."),
]


def extract(wheel: Path, out: Path) -> tuple[list[str], list[str]]:
    import wandb

    version = wandb.__version__
    if not Path(wandb.__file__).resolve().is_relative_to(wheel.resolve()):
        raise SystemExit(f"wandb imports from {wandb.__file__}, not from {wheel}: put the wheel first on PYTHONPATH")
    from_core = core_documents(wheel / "wandb" / "bin" / "wandb-core")
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.graphql"):
        old.unlink()
    written: list[str] = []
    absent: list[str] = []
    for name, sources, sent_by in DOCUMENTS:
        for source in sources:
            if source.get is None:
                text = from_core.get(source.where)
                where = f"wandb-core (Go, genqlient) operation {source.where}"
            else:
                try:
                    text = capture(source.get, source.is_probe)
                except NotInVersion:
                    text = None
                where = source.where
            if text is not None:
                body = text.strip("\n") if source.get is None else _reindent(text)
                header = f"# Source (wandb v{version}): {where}\n# Sent by: {sent_by}\n"
                (out / f"{name}.graphql").write_text(header + body + "\n")
                written.append(name)
                break
        else:
            absent.append(name)
    return written, absent


def _reindent(text: str) -> str:
    """A Python-side document re-indented by nesting (the SDK pastes fragments in at other depths)."""
    lines, depth = [], 0
    for raw in text.strip("\n").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("}"):
            depth = max(0, depth - 1)
        lines.append("  " * depth + line)
        depth = max(0, depth + line.count("{") - line.count("}") + (1 if line.startswith("}") else 0))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, required=True, help="the unpacked wheel (holds wandb/ and wandb/bin/wandb-core)")
    parser.add_argument("--out", type=Path, required=True, help="the version's directory, e.g. test/wandb/sdk-documents/0.31.0")
    args = parser.parse_args()
    written, absent = extract(args.wheel, args.out)
    print(f"{len(written)} documents in {args.out}: {', '.join(written)}")
    print(f"not in this version: {', '.join(absent) or 'none'}")


if __name__ == "__main__":
    sys.exit(main())
