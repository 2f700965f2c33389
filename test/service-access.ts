// The convention for reaching another package's service, as code: a type-only import of the owning
// package and `ctx.get('name')` (or `ctx.name` when injected), never a cast. A cast or a hand-copied
// interface would keep compiling when the owner changes its service; the owner's declaration breaks
// the build instead. Checked over every `src` file of packages/* and apps/*.
import { readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { IMPORT, type PackageInfo, readPackages, sourceFiles } from './architecture.js'

export interface AccessViolation {
  file: string
  line: number
  rule: 'cast' | 'never' | 'seam' | 'untyped'
  text: string
}

/** `declare module 'cordis' { interface Context { name: ... } }` blocks: service name -> declaring file. */
function declaredServices(files: string[]): Map<string, string> {
  const services = new Map<string, string>()
  for (const file of files) {
    const text = readFileSync(file, 'utf8')
    for (const block of text.matchAll(/declare module 'cordis' \{([\s\S]*?)\n\}/g)) {
      const context = /interface Context \{([\s\S]*?)\n {2}\}/.exec(block[1] ?? '')
      for (const member of (context?.[1] ?? '').matchAll(/^ {4}(\w+)\??:/gm)) services.set(member[1] as string, file)
    }
  }
  return services
}

/** Every file the package's compilation loads: its sources and, transitively, what they import. */
function loadedFiles(pkg: PackageInfo, bySpecifier: Map<string, string>): Set<string> {
  const seen = new Set<string>()
  const queue = sourceFiles(join(pkg.dir, 'src'))
  while (queue.length > 0) {
    const file = queue.pop() as string
    if (seen.has(file)) continue
    seen.add(file)
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      continue
    }
    for (const match of text.matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2] ?? match[3]
      if (!specifier) continue
      const target = specifier.startsWith('.')
        ? resolve(dirname(file), specifier).replace(/\.js$/, '.ts')
        : bySpecifier.get(specifier)
      if (target) queue.push(target)
    }
  }
  return seen
}

const RULES: Array<{ rule: AccessViolation['rule']; pattern: RegExp }> = [
  // `ctx.get('jobs') as JobsService`, `(ctx.get('launcher') as {...})`: the declaration already types it.
  { rule: 'cast', pattern: /\.get\(\s*'(\w+)'\s*\)\s*as\s/g },
  // `(ctx as unknown as { get(name: string): unknown })`: a hand-made Context type.
  { rule: 'cast', pattern: /as unknown as \{\s*get\(/g },
  // `ctx.get('jobs' as never)`, `ctx.on('jobs/finished' as never, ...)`: a name the compiler cannot check.
  { rule: 'never', pattern: /\.(?:get|on|once|off|emit|parallel|serial|bail|waterfall)\(\s*'[^']*'\s+as\s+never/g },
  // `ctx.tools.register(tool as never)`: a registration the seam's types no longer check.
  { rule: 'never', pattern: /\.register\w*\(\s*[\w.]+\s+as\s+never\s*[,)]/g },
  // `interface JobsSeam { ... }`: a hand-copied slice of another package's service.
  { rule: 'seam', pattern: /\binterface\s+\w+Seam\b/g },
]

/** Every breach of the service-access convention under `root`; no file is exempt. */
export function findAccessViolations(root: string): AccessViolation[] {
  const packages = readPackages(root)
  const bySpecifier = new Map(packages.flatMap((p) => [...p.exports]))
  const services = declaredServices(packages.flatMap((p) => sourceFiles(join(p.dir, 'src'))))
  const violations: AccessViolation[] = []
  for (const pkg of packages) {
    let loaded: Set<string> | undefined
    for (const file of sourceFiles(join(pkg.dir, 'src'))) {
      const path = relative(root, file)
      const text = readFileSync(file, 'utf8')
      const lineOf = (index: number) => text.slice(0, index).split('\n').length
      const report = (rule: AccessViolation['rule'], index: number, snippet: string) =>
        violations.push({ file: path, line: lineOf(index), rule, text: snippet.replace(/\s+/g, ' ').trim() })
      for (const { rule, pattern } of RULES) {
        for (const match of text.matchAll(pattern)) report(rule, match.index, match[0])
      }
      // `ctx.get('name')` is typed only when the declaring module is part of this package's build;
      // otherwise it is `any` and a change in the owner goes unnoticed.
      for (const match of text.matchAll(/\b(?:ctx|home|root|registry)\.get\(\s*'(\w+)'\s*\)/g)) {
        const name = match[1] as string
        const declaring = services.get(name)
        loaded ??= loadedFiles(pkg, bySpecifier)
        if (!declaring || !loaded.has(declaring)) report('untyped', match.index, match[0])
      }
    }
  }
  return violations
}
