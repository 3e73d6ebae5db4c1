"""How a guarded test's children inherit ``--ctx-block-real``: a Python start-up hook and a Node preload.

As coverage.py measures subprocesses, every child a guarded test starts gets, in its environment, a directory
first on ``PYTHONPATH`` holding a ``sitecustomize`` module (which guards that Python child as the test is guarded,
then runs the ``sitecustomize`` it hides, if any), and ``NODE_OPTIONS`` preloading a script that refuses a Node
child's connections (``net``, and so ``tls``, ``http2`` and ``fetch``), lookups (``dns.lookup``, ``dns.resolve*``,
``reverse`` and ``lookupService`` on the module, ``dns.promises`` and every ``Resolver``, and ``setServers`` to a
remote server) and datagrams beyond this machine; Node loads it in worker threads too, and a Node child's own
children inherit it with the environment. ``CTXSIM_BLOCK_REAL`` tells both the test and where its
refuser listens; each refusal is reported there, so it fails the test. The directory is made once per process and
removed when it ends.

A child that clears its environment (``env -i``), runs Python isolated (``-I``, ``-E``) or is neither Python nor
Node (a shell's own ``/dev/tcp``, curl ignoring the proxies) does not inherit it: for those, the network namespace
of the how-to.

Only the standard library is used: a child's start-up hook imports this module too.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = ["SETTING", "inherited", "parse_setting"]

SETTING = "CTXSIM_BLOCK_REAL"
"""The variable that carries the guard to a child: ``{"test": ..., "refuser": [host, port], "hooks": dir}``."""

_SITECUSTOMIZE = '''"""ctxsim --ctx-block-real: this Python process is a guarded test's child, guarded as it is."""
import importlib, importlib.machinery, importlib.util, os, sys, types


def _ctxsim_guard():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        package = types.ModuleType("_ctxsim_child_guard")
        package.__path__ = [{plugin!r}]
        sys.modules["_ctxsim_child_guard"] = package
        importlib.import_module("_ctxsim_child_guard._guard").install_in_child(os.environ.get({setting!r}, ""))
    except Exception as exc:
        sys.stderr.write("ctxsim: --ctx-block-real: this child's guard did not start (%s)\\n" % exc)
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_ctxsim_guard()
'''

_PRELOAD = r"""'use strict';
// ctxsim --ctx-block-real: this Node process is a guarded test's child; its connections stay on this machine.
(() => {
  let setting;
  try { setting = JSON.parse(process.env.CTXSIM_BLOCK_REAL || 'null'); } catch (e) { return; }
  if (!setting) return;
  const net = require('net'), dns = require('dns'), dgram = require('dgram');
  const connect = net.Socket.prototype.connect;
  const local = (h) => h === undefined || h === null || h === '' || h === 'localhost' || h === 'ip6-localhost' ||
    h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h) || /^::ffff:127\./i.test(h);
  const refuse = (what) => {
    const message = `ctxsim: --ctx-block-real: ${setting.test} had a child process (node, pid ${process.pid}) ` +
      `${what}: only 127.0.0.1 is allowed`;
    try {
      const report = connect.call(new net.Socket(), setting.refuser[1], setting.refuser[0]);
      report.on('error', () => {});
      report.end('CTXSIM-REFUSED ' + message);
    } catch (e) { /* no refuser: the error says it */ }
    const error = new Error(message);
    error.code = 'ECONNREFUSED';
    return error;
  };
  net.Socket.prototype.connect = function (...args) {
    let options = Array.isArray(args[0]) ? args[0][0] : args[0];
    let host, port;
    if (options !== null && typeof options === 'object') {
      if (options.path) return connect.apply(this, args);
      host = options.host; port = options.port;
    } else {
      port = options;
      if (typeof port === 'string' && !/^\d+$/.test(port)) return connect.apply(this, args);  // a Unix socket
      host = typeof args[1] === 'string' ? args[1] : undefined;
    }
    if (!local(host)) {
      const error = refuse(`open a connection to ${host}:${port}`);
      process.nextTick(() => this.destroy(error));
      return this;
    }
    return connect.apply(this, args);
  };
  const lookup = dns.lookup;
  dns.lookup = function (host, ...rest) {
    if (local(host)) return lookup.call(this, host, ...rest);
    const callback = rest[rest.length - 1];
    const error = refuse(`look up ${host}`);
    if (typeof callback === 'function') process.nextTick(() => callback(error));
    else throw error;
  };
  // dns.resolve*, reverse and lookupService ask a DNS server (c-ares), not the system's lookup: each is refused
  // for a name or address beyond this machine, on the module, on dns.promises and on every Resolver
  const asking = ['resolve', 'resolve4', 'resolve6', 'resolveAny', 'resolveCaa', 'resolveCname', 'resolveMx',
    'resolveNaptr', 'resolveNs', 'resolvePtr', 'resolveSoa', 'resolveSrv', 'resolveTlsa', 'resolveTxt', 'reverse',
    'lookupService'];
  const guardCallback = (target, name) => {
    const original = target[name];
    if (typeof original !== 'function') return;
    target[name] = function (host, ...rest) {
      if (local(host)) return original.call(this, host, ...rest);
      const callback = rest[rest.length - 1];
      const error = refuse(`look up ${host}`);
      if (typeof callback === 'function') process.nextTick(() => callback(error));
      else throw error;
    };
  };
  const guardPromise = (target, name) => {
    const original = target[name];
    if (typeof original !== 'function') return;
    target[name] = function (host, ...rest) {
      return local(host) ? original.call(this, host, ...rest) : Promise.reject(refuse(`look up ${host}`));
    };
  };
  const guardServers = (target) => {
    const original = target.setServers;
    if (typeof original !== 'function') return;
    target.setServers = function (servers, ...rest) {
      const remote = (servers || []).map((s) => String(s).replace(/^\[([^\]]*)\](:\d+)?$/, '$1')
        .replace(/^(\d+\.\d+\.\d+\.\d+):\d+$/, '$1')).find((s) => !local(s));
      if (remote !== undefined) throw refuse(`use the DNS server ${remote}`);
      return original.call(this, servers, ...rest);
    };
  };
  for (const name of asking) {
    guardCallback(dns, name);
    if (dns.Resolver) guardCallback(dns.Resolver.prototype, name);
  }
  guardServers(dns);
  if (dns.Resolver) guardServers(dns.Resolver.prototype);
  const promises = dns.promises;
  if (promises) {
    guardPromise(promises, 'lookup');
    for (const name of asking) {
      guardPromise(promises, name);
      if (promises.Resolver) guardPromise(promises.Resolver.prototype, name);
    }
    guardServers(promises);
    if (promises.Resolver) guardServers(promises.Resolver.prototype);
  }
  const send = dgram.Socket.prototype.send;
  dgram.Socket.prototype.send = function (...args) {
    const address = args.find((a, i) => i > 0 && typeof a === 'string');
    if (address !== undefined && !local(address)) throw refuse(`send a datagram to ${address}`);
    return send.apply(this, args);
  };
  const datagramConnect = dgram.Socket.prototype.connect;
  if (typeof datagramConnect === 'function') {
    dgram.Socket.prototype.connect = function (port, address, ...rest) {
      const host = typeof address === 'string' ? address : undefined;
      if (!local(host)) throw refuse(`connect a datagram socket to ${host}:${port}`);
      return datagramConnect.call(this, port, address, ...rest);
    };
  }
})();
"""

_hooks: Path | None = None


def _hook_directory() -> Path:
    """The directory of the start-up hook and the preload: this process's own (made once, removed at exit), or,
    in a guarded child, the one it inherited."""
    global _hooks
    if _hooks is not None and _hooks.is_dir():
        return _hooks
    inherited_dir = (_parsed_json(os.environ.get(SETTING, "")) or {}).get("hooks")
    if isinstance(inherited_dir, str) and os.path.isdir(inherited_dir):
        _hooks = Path(inherited_dir)
        return _hooks
    directory = Path(tempfile.mkdtemp(prefix="ctxsim-block-real-"))
    plugin = str(Path(__file__).resolve().parent)
    (directory / "sitecustomize.py").write_text(_SITECUSTOMIZE.format(plugin=plugin, setting=SETTING))
    (directory / "ctxsim_guard.js").write_text(_PRELOAD)
    atexit.register(shutil.rmtree, directory, True)
    _hooks = directory
    return directory


def inherited(env: Mapping[str, str], test: str, refuser: tuple[str, int]) -> dict[str, str]:
    """What ``env`` needs so that a child started with it is guarded as ``test`` is, reporting to ``refuser``:
    ``CTXSIM_BLOCK_REAL``, ``PYTHONPATH`` and ``NODE_OPTIONS``."""
    hooks = _hook_directory()
    python = [str(hooks), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(hooks))]
    preload = f'--require "{hooks / "ctxsim_guard.js"}"'
    node = env.get("NODE_OPTIONS", "")
    return {SETTING: json.dumps({"test": test, "refuser": list(refuser), "hooks": str(hooks)}),
            "PYTHONPATH": os.pathsep.join(python),
            "NODE_OPTIONS": node if preload in node else f"{preload} {node}".strip()}


def _parsed_json(text: str) -> dict[str, object] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def parse_setting(text: str) -> tuple[str, tuple[str, int]] | None:
    """``(test, refuser)`` from ``CTXSIM_BLOCK_REAL``'s value; None when it is not one."""
    data = _parsed_json(text)
    if data is None:
        return None
    test, refuser = data.get("test"), data.get("refuser")
    if not isinstance(test, str) or not isinstance(refuser, list) or len(refuser) != 2:
        return None
    host, port = refuser
    return (test, (host, port)) if isinstance(host, str) and isinstance(port, int) else None
