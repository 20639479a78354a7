#!/usr/bin/env node
'use strict';
// A Gauntlet evaluator plugin in Node: the keyword evaluator (keyword.js)
// served over the Gauntlet plugin protocol, version 1, which is the
// repository's harness/plugin/proto/*.proto loaded at run time, on top of
// hashicorp/go-plugin's gRPC transport (goplugin.js).
//
// Install it in the server's plugins directory under the name that says
// what it is — a symbolic link to this file, or a launcher that execs
// node on it:
//
//   ln -s "$PWD/examples/evaluator-plugin-node/plugin.js" plugins/gauntlet-evaluator-keyword-node
//
// See README.md.

const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');
const goplugin = require('./goplugin');
const keyword = require('./keyword');

// The handshake of Gauntlet plugins (harness/plugin.Handshake): the magic
// cookie only keeps the executable from being run by hand by mistake.
const MAGIC_COOKIE_KEY = 'GAUNTLET_PLUGIN';
const MAGIC_COOKIE_VALUE = '5e6b2f0c8d4a4e1f9b7a3c2d1e0f6a5b';
const PROTOCOL_VERSIONS = [1];

// The directory that holds harness/plugin/proto: the repository root,
// two levels up from this file (through a symbolic link too: Node
// resolves the main module's real path), or GAUNTLET_PROTO_ROOT.
const PROTO_ROOT = process.env.GAUNTLET_PROTO_ROOT || path.resolve(__dirname, '..', '..');
const PROTO_FILES = ['plugin.proto', 'evaluator.proto', 'host.proto', 'common.proto'].map((f) => `harness/plugin/proto/${f}`);

const PKG = JSON.parse(fs.readFileSync(path.join(__dirname, 'package.json'), 'utf8'));

goplugin.checkCookie(MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE);
const appVersion = goplugin.negotiate(PROTOCOL_VERSIONS);

// Field names as in the .proto files (snake_case), 64-bit integers as
// numbers (the values this protocol sends are small), bytes as Buffers.
const LOAD_OPTIONS = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true, includeDirs: [PROTO_ROOT] };
const pb = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_FILES, LOAD_OPTIONS)).gauntlet.plugin.v1;

// ---- Errors across the boundary ----

// ErrorDetail (common.proto) travels in the status details of every error
// the implementation returns: it tells the server the error is the
// evaluator's rather than the transport's (a bare UNAVAILABLE reads as a
// crash), and carries a ValidationError's fields.
const protoRoot = new protobuf.Root();
protoRoot.resolvePath = (_origin, target) => path.join(PROTO_ROOT, target);
protoRoot.loadSync('harness/plugin/proto/common.proto', { keepCase: true });
const ErrorDetail = protoRoot.lookupType('gauntlet.plugin.v1.ErrorDetail');
// google.rpc.Status, the grpc-status-details-bin trailer's message.
const RpcStatus = protobuf.Root.fromJSON({
  nested: {
    google: {
      nested: {
        protobuf: { nested: { Any: { fields: { type_url: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } } } },
        rpc: {
          nested: {
            Status: { fields: { code: { type: 'int32', id: 1 }, message: { type: 'string', id: 2 }, details: { rule: 'repeated', type: 'google.protobuf.Any', id: 3 } } },
          },
        },
      },
    },
  },
}).lookupType('google.rpc.Status');

// The ErrorDetail kind of each status code (harness sentinels).
const KINDS = {
  [grpc.status.INVALID_ARGUMENT]: 'invalid',
  [grpc.status.NOT_FOUND]: 'not_found',
  [grpc.status.ALREADY_EXISTS]: 'conflict',
  [grpc.status.UNAUTHENTICATED]: 'unauthorized',
  [grpc.status.UNAVAILABLE]: 'unavailable',
  [grpc.status.DEADLINE_EXCEEDED]: 'deadline_exceeded',
  [grpc.status.CANCELLED]: 'canceled',
};

/**
 * The gRPC error the server reads back as the same error: a
 * ValidationError becomes INVALID_ARGUMENT with its fields, an error with
 * a gRPC code (one a host callback returned) keeps it, anything else is
 * UNKNOWN with its message.
 * @param {any} err
 */
function toStatus(err) {
  let code = grpc.status.UNKNOWN;
  const detail = { kind: '', fields: [] };
  if (err instanceof keyword.ValidationError) {
    code = grpc.status.INVALID_ARGUMENT;
    detail.fields = err.fields.map((f) => ({ field: f.field, message: f.message }));
  } else if (typeof err.code === 'number' && err.code in KINDS) {
    code = err.code;
  }
  detail.kind = KINDS[code] || '';
  const message = String(err.message || err);
  const status = RpcStatus.encode(RpcStatus.fromObject({
    code, message,
    details: [{ type_url: 'type.googleapis.com/gauntlet.plugin.v1.ErrorDetail', value: ErrorDetail.encode(ErrorDetail.fromObject(detail)).finish() }],
  })).finish();
  const metadata = new grpc.Metadata();
  metadata.set('grpc-status-details-bin', Buffer.from(status));
  return { code, details: message, metadata };
}

// ---- The Gauntlet services ----

const server = new grpc.Server({ 'grpc.max_receive_message_length': 64 << 20 });
goplugin.addHealth(server);
goplugin.addController(server, () => shutdown('the server asked the plugin to stop'));
const broker = goplugin.addBroker(server);
const stdio = goplugin.addStdio(server);

/** The host's Model service (host.proto), once Attach has connected it. */
let model = null;

server.addService(pb.Plugin.service, {
  // Info: what this plugin is. secret_fields present (even empty) tells
  // the server exactly which config keys to mask: none here.
  Info(_call, callback) {
    callback(null, {
      name: PKG.name, version: PKG.version, kind: 'KIND_EVALUATOR', protocol_version: appVersion,
      capabilities: ['validate_config'], secret_fields: { fields: [] },
    });
  },
  // Attach: the broker id of the host's callback services (Model, for
  // the judge option). A plugin that never calls back may answer at once
  // without dialling.
  Attach(call, callback) {
    broker.dial(call.request.callback_broker_id, pb.Model)
      .then((client) => {
        if (model) model.close();
        model = client;
        callback(null, {});
      })
      .catch((err) => callback({ code: grpc.status.UNAVAILABLE, details: `dial the host's callback services: ${err.message}` }));
  },
});

/** The request's evaluator config, from its JSON. */
function configOf(evaluator) {
  const raw = evaluator && evaluator.config_json;
  if (!raw || raw.length === 0) return {};
  const cfg = JSON.parse(raw.toString('utf8'));
  if (cfg === null || typeof cfg !== 'object' || Array.isArray(cfg)) {
    throw new keyword.ValidationError([new keyword.FieldError('config', 'must be an object')]);
  }
  return cfg;
}

/**
 * Asks the run's model, through the host, whether the response answers
 * the prompt; the call inherits the evaluation's deadline and is
 * cancelled with it.
 */
function askJudge(call, req) {
  return new Promise((resolve, reject) => {
    if (!model) { reject(Object.assign(new Error('judge: the host did not attach its callback services'), { code: grpc.status.UNAVAILABLE })); return; }
    const question = `Question: ${req.test.prompt}\nResponse: ${req.response}\n\nDoes the response answer the question correctly? Reply yes or no.`;
    const chat = model.Chat({
      model_ref: req.model_ref, model: req.model_name, messages: [{ role: 'user', content: question }],
    }, { deadline: call.getDeadline() }, (err, res) => {
      if (err) { reject(Object.assign(new Error(`judge: ${err.details || err.message}`), { code: err.code })); return; }
      resolve(res);
    });
    call.on('cancelled', () => chat.cancel());
  });
}

server.addService(pb.Evaluator.service, {
  Evaluate(call, callback) {
    const req = call.request;
    (async () => {
      const cfg = keyword.parseConfig(configOf(req.evaluator));
      const expected = (req.test && req.test.expected && req.test.expected.answer) || '';
      const result = keyword.score(cfg, req.response || '', expected);
      let usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
      if (cfg.judge) {
        if (!req.model_ref) {
          result.details.judge = 'no model';
        } else {
          const res = await askJudge(call, req);
          result.details.judge = ((res.message && res.message.content) || '').trim().toLowerCase().startsWith('yes') ? 'yes' : 'no';
          usage = res.usage || usage;
        }
      }
      return { score: result.score, passed: result.passed, details_json: Buffer.from(JSON.stringify(result.details)), usage };
    })().then((res) => callback(null, res), (err) => callback(toStatus(err)));
  },
  ValidateConfig(call, callback) {
    try {
      keyword.parseConfig(configOf(call.request.evaluator));
      callback(null, {});
    } catch (err) {
      callback(toStatus(err));
    }
  },
});

// ---- Lifecycle ----

let stopping = false;
function shutdown(why, code = 0) {
  if (stopping) return;
  stopping = true;
  goplugin.log(code ? 'warn' : 'info', `exiting: ${why}`);
  server.forceShutdown();
  process.exit(code);
}

// Ctrl-C in the server's terminal reaches the whole process group: the
// server stops its plugins itself, in order, so the interrupt is ignored
// here (as go-plugin's Go plugins do). SIGTERM ends the plugin.
process.on('SIGINT', () => goplugin.log('debug', 'interrupt ignored: the server stops its plugins'));
process.on('SIGTERM', () => shutdown('SIGTERM'));
// The server killed with SIGKILL cannot stop its plugins: notice and go.
goplugin.watchParent(() => shutdown('the server process is gone', 2));

goplugin.listen(server, appVersion, { write: stdio.origWrite }).then(() => {
  stdio.redirect();
  goplugin.log('info', 'serving', { plugin: PKG.name, version: PKG.version, protocol: appVersion, pid: process.pid });
}, (err) => {
  goplugin.log('error', `cannot listen: ${err.message}`);
  process.exit(1);
});
