// A Node https server that requires a client certificate, as a Node
// service does mutual TLS (requestCert, rejectUnauthorized, ca): what
// knowngood's -tls-client-ca is set beside.
// Usage: node scripts/node/mtls-server.mjs CERT KEY CLIENT_CA
// Prints one JSON line {"msg":"listening","addr":"HOST:PORT"} when ready;
// exits on SIGINT or SIGTERM.
import fs from "node:fs";
import https from "node:https";

const [cert, key, ca] = process.argv.slice(2);
if (!cert || !key || !ca) {
  console.error("mtls-server: want CERT KEY CLIENT_CA");
  process.exit(2);
}
const server = https.createServer(
  { cert: fs.readFileSync(cert), key: fs.readFileSync(key), ca: fs.readFileSync(ca), requestCert: true, rejectUnauthorized: true },
  (_, res) => res.end("ok"),
);
server.on("tlsClientError", () => {}); // a refused client costs its connection only
server.listen(0, "127.0.0.1", () => {
  const { address, port } = server.address();
  console.log(JSON.stringify({ msg: "listening", addr: `${address}:${port}` }));
});
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => process.exit(0));
