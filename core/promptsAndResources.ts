import type { PromptDefinition } from './tool/prompt.ts'
import type { ResourceDefinition, ResourceTemplateDefinition } from './tool/resource.ts'
import type { GroupDefinition } from './tool/tool.ts'
import { uriTemplateMatcher } from './uriTemplate.ts'

const PROMPT_NAME = /^[A-Za-z0-9_.-]{1,128}$/

/** A resource template with its compiled matcher. */
export interface RegisteredTemplate {
  readonly definition: ResourceTemplateDefinition
  readonly match: (uri: string) => Record<string, string> | undefined
}

/** The prompts and resources one path serves, and their lists serialized once. */
export interface PromptsAndResources {
  readonly prompts: ReadonlyMap<string, PromptDefinition>
  /** `prompts/list`'s `prompts` array. */
  readonly promptsJson: string
  readonly resources: ReadonlyMap<string, ResourceDefinition>
  /** `resources/list`'s `resources` array. */
  readonly resourcesJson: string
  readonly templates: readonly RegisteredTemplate[]
  /** `resources/templates/list`'s `resourceTemplates` array. */
  readonly templatesJson: string
}

/**
 * Refuses, at start, a group whose prompts or resources would be ambiguous next to the groups
 * already registered: a malformed or repeated prompt name, a repeated resource URI or template,
 * a template that names no variable, a completer for a variable the template does not have.
 *
 * @example
 * checkPromptsAndResources(group, registeredGroups) // throws Error('group "x": prompt "y" is already registered by group "bruno"')
 */
export function checkPromptsAndResources(group: GroupDefinition, registered: Iterable<GroupDefinition>): void {
  const prompts = new Map<string, string>()
  const uris = new Map<string, string>()
  for (const other of registered) {
    for (const prompt of other.prompts ?? []) prompts.set(prompt.name, other.name)
    for (const resource of other.resources ?? []) uris.set(resource.uri, other.name)
    for (const template of other.resourceTemplates ?? []) uris.set(template.uriTemplate, other.name)
  }
  const claim = (seen: Map<string, string>, what: string, key: string) => {
    const owner = seen.get(key)
    if (owner !== undefined) throw new Error(`group "${group.name}": ${what} "${key}" is already registered by group "${owner}"`)
    seen.set(key, group.name)
  }
  for (const prompt of group.prompts ?? []) {
    if (!PROMPT_NAME.test(prompt.name)) throw new Error(`group "${group.name}": prompt name "${prompt.name}" must match ${PROMPT_NAME}`)
    claim(prompts, 'prompt', prompt.name)
  }
  for (const resource of group.resources ?? []) claim(uris, 'resource', resource.uri)
  for (const template of group.resourceTemplates ?? []) {
    claim(uris, 'resource template', template.uriTemplate)
    uriTemplateMatcher(template.uriTemplate)
    for (const variable of Object.keys(template.complete ?? {})) {
      if (!template.uriTemplate.includes(`{${variable}}`)) {
        throw new Error(`group "${group.name}": template "${template.uriTemplate}" completes "${variable}", which it does not have`)
      }
    }
  }
}

/**
 * What a path's groups (in group order) contribute besides tools. A prompt is served only where
 * every group it `requires` is served too, so its text never names a tool the path lacks.
 *
 * @example
 * composePromptsAndResources(groups).prompts.has('swap_to_eth') // only where bruno, calibur and uniswap are served
 */
export function composePromptsAndResources(groups: readonly GroupDefinition[]): PromptsAndResources {
  const served = new Set(groups.map((group) => group.name))
  const prompts = new Map<string, PromptDefinition>()
  const resources = new Map<string, ResourceDefinition>()
  const templates: RegisteredTemplate[] = []
  for (const group of groups) {
    for (const prompt of group.prompts ?? []) {
      if ((prompt.requires ?? []).every((name) => served.has(name))) prompts.set(prompt.name, prompt)
    }
    for (const resource of group.resources ?? []) resources.set(resource.uri, resource)
    for (const template of group.resourceTemplates ?? []) templates.push({ definition: template, match: uriTemplateMatcher(template.uriTemplate) })
  }
  return {
    prompts,
    promptsJson: JSON.stringify([...prompts.values()].map(promptListing)),
    resources,
    resourcesJson: JSON.stringify([...resources.values()].map(({ uri, name, title, description, mimeType }) => ({ uri, name, title, description, mimeType }))),
    templates,
    templatesJson: JSON.stringify(
      templates.map(({ definition: { uriTemplate, name, title, description, mimeType } }) => ({ uriTemplate, name, title, description, mimeType })),
    ),
  }
}

function promptListing(prompt: PromptDefinition) {
  return {
    name: prompt.name,
    title: prompt.title,
    description: prompt.description,
    arguments: prompt.arguments.map(({ name, title, description, required }) => ({ name, title, description, required: required ?? false })),
  }
}
