// helper for mariadb.test.ts: opens an episode on MariaDB, prints its database, then dies hard
import { loadTasks, MysqlBackend } from '../../../envs/dbbench/index.ts';

const url = process.argv[2] ?? '';
const backend = new MysqlBackend({ url });
const task = loadTasks({ file: 'v0.2/dev' })[0]!;
const session = await backend.open(task);
process.stdout.write(`${session.database}\n`, () => process.kill(process.pid, 'SIGKILL'));
