"""docker-compose.yml and its proxy config (deploy/) hold together: the services a lab of several app servers needs,
the environment each gets, an nginx upstream naming exactly the app servers, sticky, with the websocket upgrade, and
signing users in the way the app reads them (evalcore.identity). Docker cannot run in CI; the config is checked by
structure here, and by ``nginx -t`` where nginx is installed (rendered as bench/bench_load.py runs it)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalcore import identity

yaml = pytest.importorskip("yaml", reason="PyYAML reads docker-compose.yml")

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"
TEMPLATE = ROOT / "deploy" / "nginx" / "judgescope.conf.template"
APPS, WORKERS = ("app1", "app2"), ("worker1", "worker2")


@pytest.fixture(scope="module")
def services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def _proxy_headers(conf: str) -> dict[str, str]:
    """The proxy_set_header lines of the template: header name -> value as written."""
    return {m[1]: m[2].strip('"') for m in re.finditer(r"proxy_set_header\s+(\S+)\s+(\"[^\"]*\"|\S+);", conf)}


def test_the_services_are_a_store_two_app_servers_two_workers_and_a_proxy(services):
    assert set(services) == {"db", *APPS, *WORKERS, "proxy"}
    assert services["db"]["image"].startswith("postgres:") and "healthcheck" in services["db"]
    assert "max_connections=1000" in services["db"]["command"]  # the app servers' connections, one per page load
    assert services["proxy"]["image"].startswith("nginx:")
    for name in APPS + WORKERS:
        assert services[name]["depends_on"]["db"]["condition"] == "service_healthy"
    for name in APPS:
        assert services[name]["command"][:5] == ["python", "-m", "streamlit", "run", "app.py"]
        assert "ports" not in services[name]  # reachable only through the proxy
    for name in WORKERS:
        assert services[name]["command"] == ["python", "-m", "evalcore", "worker"]
    assert list(services["proxy"]["ports"]) == ["8080:80"]  # the one published port


def test_every_server_and_worker_gets_the_same_postgresql_store_and_the_servers_the_sign_in(services):
    envs = {name: services[name]["environment"] for name in APPS + WORKERS}
    assert len({e["EVALCORE_DB"] for e in envs.values()}) == 1
    assert envs["app1"]["EVALCORE_DB"].startswith("postgresql://") and "@db:" in envs["app1"]["EVALCORE_DB"]
    for name in APPS:
        env = envs[name]
        assert env == envs["app1"]  # the servers are interchangeable: whichever a user lands on behaves the same
        assert env["EVALCORE_USER_HEADER"] == "X-Forwarded-User"
        assert env["EVALCORE_PROXY_SECRET"].startswith("${EVALCORE_PROXY_SECRET")  # from the environment, not here
        assert env["STREAMLIT_SERVER_COOKIE_SECRET"].startswith("${STREAMLIT_SERVER_COOKIE_SECRET")
    for name in WORKERS:
        assert "EVALCORE_USER_HEADER" not in envs[name]  # a worker serves no request
    assert services["proxy"]["environment"]["EVALCORE_PROXY_SECRET"] == envs["app1"]["EVALCORE_PROXY_SECRET"]
    secrets = re.findall(r"(?m)^\s*(?:POSTGRES_PASSWORD|PGPASSWORD|EVALCORE_PROXY_SECRET|\w*SECRET\w*):\s*(\S.*)$",
                         COMPOSE.read_text())
    assert secrets and all(v.startswith("${") for v in secrets)  # no secret written into the file


def test_the_upstream_names_exactly_the_app_servers_sticky_with_the_websocket_upgrade(services):
    conf = TEMPLATE.read_text()
    upstream = re.search(r"upstream judgescope_app \{(.*?)\}", conf, re.S)[1]
    ports = {services[a]["command"][services[a]["command"].index("--server.port") + 1] for a in APPS}
    servers = re.findall(r"^\s*server (\S+?):(\d+)\b", upstream, re.M)
    assert servers == [(a, p) for a, p in zip(APPS, sorted(ports) * len(APPS))] and ports == {"8501"}
    assert re.search(r"^\s*(hash \$remote_user consistent|ip_hash);", upstream, re.M)  # sticky
    headers = _proxy_headers(conf)
    assert headers["Upgrade"] == "$http_upgrade" and headers["Connection"] == "$connection_upgrade"
    assert "proxy_http_version 1.1;" in conf and "proxy_pass http://judgescope_app;" in conf
    mount = [v for v in services["proxy"]["volumes"] if v.startswith("./deploy/nginx/judgescope.conf.template:")]
    assert mount and mount[0].split(":")[1].startswith("/etc/nginx/templates/")


def test_the_proxy_signs_users_in_the_way_the_app_reads_them(services):
    """The headers nginx sends for a user signed in as alice name alice to evalcore.identity, with the secret; the
    visitor's own copies are overwritten (a proxy_set_header replaces), the password is not passed on."""
    conf = TEMPLATE.read_text()
    assert re.search(r"^\s*auth_basic \"[^\"]+\";", conf, re.M) and "auth_basic_user_file /etc/nginx/htpasswd;" in conf
    headers = _proxy_headers(conf)
    header = services["app1"]["environment"]["EVALCORE_USER_HEADER"]
    assert headers[header] == "$remote_user" and headers["Authorization"] == ""
    assert headers[identity.PROXY_SECRET_HEADER] == "${EVALCORE_PROXY_SECRET}"
    assert conf.count("${EVALCORE_PROXY_SECRET}") == 1  # the image's envsubst fills it in there only
    secret = "s" * 32
    sent = {k: v.replace("$remote_user", "alice").replace("${EVALCORE_PROXY_SECRET}", secret)
            for k, v in headers.items()}
    assert identity.user_from_headers(sent, header, secret) == identity.User("alice", "header")
    with pytest.raises(identity.UntrustedRequest):  # the same name without the proxy's secret is refused
        identity.user_from_headers({header: "alice"}, header, secret)


def test_the_image_installs_the_postgres_extra():
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    assert re.search(r'pip install .*"?\.\[postgres\]"?', dockerfile)


@pytest.mark.skipif(shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists(),
                    reason="nginx is not installed (apt-get install nginx-light)")
def test_nginx_accepts_the_config_as_the_bench_renders_it(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_load_for_compose", ROOT / "bench" / "bench_load.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    (tmp_path / "htpasswd").write_text("alice:{PLAIN}pw\n")
    conf = tmp_path / "nginx.conf"
    conf.write_text(bench.nginx_conf(["127.0.0.1:18501", "127.0.0.1:18502"], 18080, tmp_path / "htpasswd",
                                     "s" * 32, tmp_path))
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    done = subprocess.run([nginx, "-t", "-p", str(tmp_path), "-c", str(conf), "-e", str(tmp_path / "error.log")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "server 127.0.0.1:18501" in conf.read_text() and "app1" not in conf.read_text()
