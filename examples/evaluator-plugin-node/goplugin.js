'use strict';
// The hashicorp/go-plugin side of a plugin written in Node: everything a
// host built with go-plugin (as the Gauntlet server is) expects of a gRPC
// plugin process, whatever the plugin does.
//
//   - checkCookie: refuse to run unless started by the host (the magic
//     cookie environment variable);
//   - negotiate: pick the app protocol version from the versions the host
//     offers (PLUGIN_PROTOCOL_VERSIONS);
//   - serve: listen on a Unix socket (in PLUGIN_UNIX_SOCKET_DIR when the
//     host sets it) and print the handshake line on stdout;
//   - the services go-plugin's host calls besides the application's:
//     grpc.health.v1.Health ("plugin" SERVING), plugin.GRPCController
//     (Shutdown), plugin.GRPCBroker (where the host announces the callback
//     services it serves) and plugin.GRPCStdio (what the plugin prints,
//     relayed to the host's log);
//   - watchParent: exit when the host process is gone, so that a host
//     killed with SIGKILL leaves no orphan behind;
//   - log: structured lines on stderr in the JSON form the host reads.
//
// go-plugin's own services are not in the repository's .proto files: they
// are go-plugin's wire contract, declared here in protobuf.js JSON form
// (package "plugin" and "grpc.health.v1", as go-plugin registers them).

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

/** go-plugin's core protocol version: the first field of the handshake line. */
const CORE_PROTOCOL_VERSION = 1;

/** The longest Unix socket path every system accepts (macOS: 104 bytes with the NUL). */
const MAX_SOCKET_PATH = 103;

const GO_PLUGIN_SERVICES = {
  nested: {
    plugin: {
      nested: {
        Empty: { fields: {} },
        ConnInfo: {
          fields: {
            service_id: { type: 'uint32', id: 1 },
            network: { type: 'string', id: 2 },
            address: { type: 'string', id: 3 },
            knock: { type: 'Knock', id: 4 },
          },
          nested: {
            Knock: { fields: { knock: { type: 'bool', id: 1 }, ack: { type: 'bool', id: 2 }, error: { type: 'string', id: 3 } } },
          },
        },
        StdioData: {
          fields: { channel: { type: 'Channel', id: 1 }, data: { type: 'bytes', id: 2 } },
          nested: { Channel: { values: { INVALID: 0, STDOUT: 1, STDERR: 2 } } },
        },
        GRPCBroker: {
          methods: { StartStream: { requestType: 'ConnInfo', requestStream: true, responseType: 'ConnInfo', responseStream: true } },
        },
        GRPCController: { methods: { Shutdown: { requestType: 'Empty', responseType: 'Empty' } } },
        GRPCStdio: { methods: { StreamStdio: { requestType: 'Empty', responseType: 'StdioData', responseStream: true } } },
      },
    },
    grpc: {
      nested: {
        health: {
          nested: {
            v1: {
              nested: {
                HealthCheckRequest: { fields: { service: { type: 'string', id: 1 } } },
                HealthCheckResponse: {
                  fields: { status: { type: 'ServingStatus', id: 1 } },
                  nested: { ServingStatus: { values: { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 } } },
                },
                Health: {
                  methods: {
                    Check: { requestType: 'HealthCheckRequest', responseType: 'HealthCheckResponse' },
                    Watch: { requestType: 'HealthCheckRequest', responseType: 'HealthCheckResponse', responseStream: true },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
};

const goPlugin = grpc.loadPackageDefinition(
  protoLoader.fromJSON(GO_PLUGIN_SERVICES, { keepCase: true, enums: String, defaults: true }));

// ---- Logging ----

/**
 * Writes one log record to stderr as a JSON line in hclog's form
 * (@level, @message, @timestamp and the attributes), which the host logs
 * with the plugin's name, level and attributes. Plain lines on stderr
 * reach the host's log too, at debug level only.
 * @param {'trace'|'debug'|'info'|'warn'|'error'} level
 * @param {string} message
 * @param {Record<string, unknown>} [attrs]
 */
function log(level, message, attrs = {}) {
  // go-plugin parses the timestamp with microseconds.
  const ts = new Date().toISOString().replace(/Z$/, '000Z');
  process.stderr.write(JSON.stringify({ ...attrs, '@level': level, '@message': message, '@timestamp': ts }) + '\n');
}

// ---- Start-up ----

/**
 * Exits unless the host set the magic cookie: a plugin run by hand says
 * what it is instead of waiting for a host that will never connect.
 */
function checkCookie(key, value) {
  if (process.env[key] === value) return;
  process.stderr.write(
    'This is a Gauntlet plugin: the Gauntlet server runs it from its plugins directory.\n' +
    'It is not meant to be run by hand.\n');
  process.exit(1);
}

/**
 * Picks the highest app protocol version both sides speak from the host's
 * PLUGIN_PROTOCOL_VERSIONS; exits when there is none.
 * @param {number[]} supported
 */
function negotiate(supported) {
  const offered = (process.env.PLUGIN_PROTOCOL_VERSIONS || '').split(',').map((v) => Number(v.trim())).filter(Number.isInteger);
  const common = supported.filter((v) => offered.length === 0 || offered.includes(v));
  if (!common.length) {
    log('error', 'no common plugin protocol version', { host_offers: offered.join(','), plugin_speaks: supported.join(',') });
    process.exit(1);
  }
  return Math.max(...common);
}

// ---- go-plugin's services ----

/** Serves grpc.health.v1.Health: "plugin" (and the server as a whole, "") is SERVING. */
function addHealth(server) {
  const serving = (service) => service === '' || service === 'plugin';
  server.addService(goPlugin.grpc.health.v1.Health.service, {
    Check(call, callback) {
      if (!serving(call.request.service)) {
        callback({ code: grpc.status.NOT_FOUND, details: `unknown service ${call.request.service}` });
        return;
      }
      callback(null, { status: 'SERVING' });
    },
    Watch(call) {
      call.write({ status: serving(call.request.service) ? 'SERVING' : 'SERVICE_UNKNOWN' });
      // Kept open until the host hangs up; the status never changes.
      call.on('cancelled', () => call.end());
    },
  });
}

/** Serves plugin.GRPCController: the host's Shutdown calls onShutdown once answered. */
function addController(server, onShutdown) {
  server.addService(goPlugin.plugin.GRPCController.service, {
    Shutdown(call, callback) {
      callback(null, {});
      setImmediate(onShutdown);
    },
  });
}

/**
 * Serves plugin.GRPCBroker, go-plugin's broker: the host opens one stream
 * right after connecting, and announces on it each extra gRPC server it
 * starts for the plugin (service id → network and address). The Gauntlet
 * server starts one for its callback services (Model, ChannelHost) and
 * tells the plugin its id in Plugin.Attach. Returns dial(id), which waits
 * (5 s at most) for the announcement and connects a client constructor
 * to it.
 */
function addBroker(server) {
  /** @type {Map<number, {network: string, address: string}>} */
  const announced = new Map();
  /** @type {Map<number, Array<(info: {network: string, address: string}) => void>>} */
  const waiting = new Map();
  server.addService(goPlugin.plugin.GRPCBroker.service, {
    StartStream(stream) {
      stream.on('data', (info) => {
        if (info.knock && info.knock.knock) return; // multiplexed brokering: not offered by this host
        const conn = { network: info.network, address: info.address };
        announced.set(info.service_id, conn);
        for (const resolve of waiting.get(info.service_id) || []) resolve(conn);
        waiting.delete(info.service_id);
      });
      stream.on('error', () => {});
      stream.on('end', () => stream.end());
    },
  });
  return {
    /**
     * @param {number} id the broker id the host named
     * @param {new (address: string, creds: grpc.ChannelCredentials, options?: object) => grpc.Client} Client
     */
    dial(id, Client) {
      return new Promise((resolve, reject) => {
        const connect = (conn) => {
          const target = conn.network === 'unix' ? `unix:${conn.address}` : conn.address;
          resolve(new Client(target, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': 64 << 20 }));
        };
        if (announced.has(id)) { connect(announced.get(id)); return; }
        const timer = setTimeout(() => reject(new Error(`the host announced no broker connection ${id} within 5 s`)), 5000);
        const list = waiting.get(id) || [];
        list.push((conn) => { clearTimeout(timer); connect(conn); });
        waiting.set(id, list);
      });
    },
  };
}

/**
 * Serves plugin.GRPCStdio, through which a go-plugin host copies what the
 * plugin prints into its log (it discards the plugin's own stdout after
 * the handshake line). From the call on, what is written to
 * process.stdout goes there; before, it is kept (up to 1 MiB).
 */
function addStdio(server) {
  let stream = null;
  /** @type {Buffer[]} */
  let pending = [];
  let pendingBytes = 0;
  const origWrite = process.stdout.write.bind(process.stdout);
  server.addService(goPlugin.plugin.GRPCStdio.service, {
    StreamStdio(call) {
      stream = call;
      for (const data of pending) call.write({ channel: 'STDOUT', data });
      pending = [];
      call.on('cancelled', () => { if (stream === call) stream = null; });
    },
  });
  return {
    /** Routes process.stdout to the host once the handshake line is out. */
    redirect() {
      process.stdout.write = (chunk, encoding, cb) => {
        const data = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk), typeof encoding === 'string' ? encoding : 'utf8');
        if (stream) stream.write({ channel: 'STDOUT', data });
        else if (pendingBytes + data.length <= 1 << 20) { pending.push(data); pendingBytes += data.length; }
        const done = typeof encoding === 'function' ? encoding : cb;
        if (done) done();
        return true;
      };
    },
    origWrite,
  };
}

// ---- Serving ----

/**
 * Listens on a fresh Unix socket and prints the handshake line. The host
 * may pass PLUGIN_UNIX_SOCKET_DIR (a private directory for the socket);
 * else the system's temporary directory is used. Resolves to the socket
 * path once the host has the line.
 * @param {grpc.Server} server
 * @param {number} appVersion the negotiated app protocol version
 * @param {{ write: (s: string) => void }} stdout where the handshake goes
 */
function listen(server, appVersion, stdout) {
  if (process.env.PLUGIN_CLIENT_CERT) {
    // The host asked for go-plugin's AutoMTLS, which this example does not
    // implement; the Gauntlet server does not ask for it.
    log('error', 'the host asks for mTLS (PLUGIN_CLIENT_CERT), which this plugin does not support');
    process.exit(1);
  }
  const dir = process.env.PLUGIN_UNIX_SOCKET_DIR || os.tmpdir();
  const socket = path.join(dir, `plugin${crypto.randomBytes(4).toString('hex')}`);
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH) {
    // The system would cut it short, and the host could not connect.
    return Promise.reject(new Error(`the socket path ${socket} is longer than ${MAX_SOCKET_PATH} bytes: give the server a shorter TMPDIR`));
  }
  return new Promise((resolve, reject) => {
    server.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) => {
      if (err) { reject(err); return; }
      process.on('exit', () => fs.rmSync(socket, { force: true }));
      // CORE-PROTOCOL-VERSION | APP-PROTOCOL-VERSION | NETWORK | ADDRESS | PROTOCOL
      stdout.write(`${CORE_PROTOCOL_VERSION}|${appVersion}|unix|${socket}|grpc\n`);
      resolve(socket);
    });
  });
}

/**
 * Calls onGone when the process that started this one (the host) is
 * gone: its parent changes (to init or a subreaper). go-plugin hands the
 * plugin the host's own stdin, which never closes when the host dies, so
 * the parent is what tells. The plugin must be the host's direct child:
 * a shell launcher must exec node, not run it as a child.
 * @param {() => void} onGone
 * @param {number} [intervalMs]
 */
function watchParent(onGone, intervalMs = 500) {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(timer);
      onGone();
    }
  }, intervalMs);
  timer.unref();
}

module.exports = {
  CORE_PROTOCOL_VERSION, log, checkCookie, negotiate, addHealth, addController, addBroker, addStdio, listen, watchParent,
};
