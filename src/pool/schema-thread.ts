/**
 * A schema thread's entry (a plain worker_threads Worker, see schema-pool.ts): each message is one
 * SchemaTask, answered with its id. The thread keeps compiled validators by schema key
 * (core/exec/schema-compiler.ts); it holds no native state, so the pool may terminate it at any point.
 */
import { parentPort } from 'node:worker_threads';
import { createSchemaCompiler, type ArgumentsVerdict } from '../core/exec/schema-compiler.js';
import type { SchemaCheckOutput, SchemaReply, SchemaRequest, SchemaTask } from './tasks.js';

const compiler = createSchemaCompiler();

function run(task: SchemaTask): SchemaCheckOutput | ArgumentsVerdict {
  if (task.op === 'validate') return compiler.validate(task.key, task.schema, task.args);
  for (const [index, schema] of task.schemas.entries()) {
    const problem = compiler.check(schema);
    if (problem !== null) return { index, problem };
  }
  return null;
}

if (parentPort) {
  const port = parentPort;
  port.on('message', ({ id, task }: SchemaRequest) => {
    let reply: SchemaReply;
    try {
      reply = { id, ok: true, value: run(task) };
    } catch (err) {
      reply = { id, ok: false, message: err instanceof Error ? err.message : String(err) };
    }
    port.postMessage(reply);
  });
}
