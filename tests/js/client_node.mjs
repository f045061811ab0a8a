// The JavaScript client (@kubernetes/client-node) as dashboards use it: the default kubeconfig ($KUBECONFIG),
// its CA verified, nothing skipped. CLIENT_NODE_DIR is where npm installed the package (tests/test_client_node.py).
//   node client_node.mjs list-pods NAMESPACE        -> {"pods": [{"name": ..., "phase": ...}]}
//   node client_node.mjs create NAMESPACE FILE.json -> {"created": {"name": ..., "uid": ...}}   (an MXJob)
// Prints one JSON line; on an error, the error's message (and the server's status body) on stderr, exit 1.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const entry = createRequire(join(process.env.CLIENT_NODE_DIR, 'package.json')).resolve('@kubernetes/client-node');
const k8s = await import(pathToFileURL(entry).href);
const [command, namespace, file] = process.argv.slice(2);
const kc = new k8s.KubeConfig();
kc.loadFromDefault();

try {
  if (command === 'list-pods') {
    const list = await kc.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace });
    console.log(JSON.stringify({ pods: list.items.map((p) => ({ name: p.metadata.name, phase: p.status?.phase })) }));
  } else if (command === 'create') {
    const body = JSON.parse(readFileSync(file, 'utf8'));
    const [group, version] = body.apiVersion.split('/');
    const created = await kc.makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject(
      { group, version, namespace, plural: 'mxjobs', body });
    console.log(JSON.stringify({ created: { name: created.metadata.name, uid: created.metadata.uid } }));
  } else {
    throw new Error(`unknown command ${command}: list-pods or create`);
  }
} catch (error) {
  console.error(`${error.message}${error.body ? `\n${error.body}` : ''}`);
  process.exit(1);
}
