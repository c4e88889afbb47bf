/**
 * A config problem the operator must fix; the CLI prints it and exits 2. In a file of its own so the CLI
 * can recognise it without loading the config schema (cli.ts loads each command's modules on demand).
 */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
