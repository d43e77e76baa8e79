import { stat } from 'node:fs/promises'
import { resolve } from 'node:path'
import { CLIENT_NAMES, CLIENTS, type ClientName } from '../setup/clients.ts'
import { putJsonEntry } from '../setup/jsonEntry.ts'
import { mcpEndpoint } from '../setup/mcpEndpoint.ts'
import type { EntryOutcome } from '../setup/outcome.ts'
import { putTomlEntry } from '../setup/tomlEntry.ts'
import { builtinGroups } from '../../plugins/index.ts'
import { parseFlags, type Command } from './command.ts'

const GROUP_NAMES = builtinGroups.map((group) => group.name)

const usage = `Usage: bruno setup [options]

Writes Bruno into an agent's project MCP configuration:
  claude   .mcp.json              mcpServers.<name> = { type: "http", url }
  cursor   .cursor/mcp.json       mcpServers.<name> = { url }
  vscode   .vscode/mcp.json       servers.<name> = { type: "http", url }
  codex    .codex/config.toml     [mcp_servers.<name>] url = …
  gemini   .gemini/settings.json  mcpServers.<name> = { httpUrl }
Everything else in the file is kept. Nothing is written when the entry is already there; a
different entry under the same name is left alone unless --force. A file that is not plain JSON
(comments, trailing commas) is not rewritten: the entry to add by hand is printed instead.
Exits 1 if any file was left without the entry. Each agent asks before it runs a server a project
names (Claude Code's approval, Codex's trusted projects, VS Code's Workspace Trust, Gemini CLI's
Trusted Folders).

Options:
  --client <clients>  ${CLIENT_NAMES.join(' | ')} | all; comma-separated or repeated (default all)
  --url <url>         Bruno's URL (default http://127.0.0.1:3030); /mcp is added unless it is there
  --groups <groups>   comma-separated groups to serve the agent (${GROUP_NAMES.join(', ')}); default all
  --name <name>       the server's name in the config (default bruno)
  --dir <directory>   the project directory the files are in, which must exist (default: the current directory)
  --force             replace a different entry of the same name
  -h, --help          show this help
`

const GROUPS = /^[a-z0-9][a-z0-9_-]*(,[a-z0-9][a-z0-9_-]*)*$/
const NAME = /^[A-Za-z0-9_-]{1,64}$/

const verbs: Record<EntryOutcome['status'], string> = {
  created: 'created',
  added: 'added to',
  unchanged: 'already in',
  replaced: 'replaced in',
  differs: 'left alone',
  manual: 'not written to',
}

/**
 * `bruno setup`: writes the MCP client configuration of each named agent.
 *
 * @example
 * // npx tsx core/cli.ts setup --client claude --client vscode --url https://bruno.example.com --groups bruno,erc20
 */
export const setupCommand: Command = {
  name: 'setup',
  summary: 'write an agent\'s MCP config (Claude Code, Cursor, VS Code, Codex, Gemini CLI) for a Bruno URL',
  usage,
  async run(argv, io) {
    const { values } = parseFlags('bruno setup', {
      args: [...argv],
      options: {
        client: { type: 'string', multiple: true },
        url: { type: 'string', default: 'http://127.0.0.1:3030' },
        groups: { type: 'string' },
        name: { type: 'string', default: 'bruno' },
        dir: { type: 'string', default: '.' },
        force: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h' },
      },
    })
    if (values.help) {
      io.stdout.write(usage)
      return 0
    }
    const requested = (values.client ?? ['all']).flatMap((list) => list.split(','))
    const unknown = requested.filter((client) => client !== 'all' && !(CLIENT_NAMES as readonly string[]).includes(client))
    if (unknown.length > 0) {
      io.stderr.write(`bruno setup: --client must be one of ${CLIENT_NAMES.join(', ')}, all${unknown.length ? ` (not ${unknown.join(', ')})` : ''}\n`)
      return 2
    }
    if (values.groups !== undefined && !GROUPS.test(values.groups)) {
      io.stderr.write('bruno setup: --groups is a comma-separated list of group names, e.g. erc20,uniswap\n')
      return 2
    }
    const unknownGroups = (values.groups?.split(',') ?? []).filter((group) => !GROUP_NAMES.includes(group))
    if (unknownGroups.length > 0) {
      io.stderr.write(`bruno setup: --groups: no group ${unknownGroups.map((group) => `"${group}"`).join(', ')}; Bruno's groups are ${GROUP_NAMES.join(', ')}\n`)
      return 2
    }
    const dirStat = await stat(values.dir).catch(() => undefined)
    if (!dirStat?.isDirectory()) {
      io.stderr.write(`bruno setup: --dir: ${values.dir} is not an existing directory (the agent's project directory)\n`)
      return 2
    }
    if (!NAME.test(values.name)) {
      io.stderr.write('bruno setup: --name may hold letters, digits, "-" and "_" only\n')
      return 2
    }
    let url: string
    try {
      url = mcpEndpoint(values.url, values.groups?.split(',') ?? [])
    } catch (error) {
      io.stderr.write(`bruno setup: ${error instanceof TypeError ? `--url: ${values.url} is not a URL` : (error as Error).message}\n`)
      return 2
    }
    const clients: ClientName[] = requested.includes('all') ? [...CLIENT_NAMES] : [...new Set(requested as ClientName[])]
    let complete = true
    for (const client of clients) {
      const file = CLIENTS[client]
      const path = resolve(values.dir, file.path)
      const put = file.format === 'json' ? putJsonEntry : putTomlEntry
      const outcome = await put(path, file.container, values.name, file.entry(url), values.force)
      io.stdout.write(`${client}: "${values.name}" ${verbs[outcome.status]} ${file.path}${outcome.reason ? `: ${outcome.reason}` : ''}\n`)
      if (outcome.snippet) io.stdout.write(`${indent(outcome.snippet)}\n`)
      if (outcome.status === 'differs' || outcome.status === 'manual') complete = false
    }
    return complete ? 0 : 1
  },
}

function indent(text: string): string {
  return text.trimEnd().split('\n').map((line) => `    ${line}`).join('\n')
}
