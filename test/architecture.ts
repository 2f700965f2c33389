// The seam rule as code: a module that is not a provider never imports a provider module.
// Providers are declared per package in package.json as "dsh": { "providers": ["./src/x.ts", ...] }
// and are referenced only from bundle rows and tests. A package marked "dsh": { "testSupport": true }
// is test code (it composes trees from providers) and no other package's source may import it.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

export interface Violation {
  importer: string
  specifier: string
  provider: string
}

export interface PackageInfo {
  name: string
  dir: string
  providers: Set<string>
  /** Subpath export ("@dsh/x/y") -> source file. */
  exports: Map<string, string>
  /** Test code: may import providers; only tests may import it. */
  testSupport: boolean
}

export function readPackages(root: string): PackageInfo[] {
  const out: PackageInfo[] = []
  for (const group of ['packages', 'apps', 'examples']) {
    const groupDir = join(root, group)
    if (!existsSync(groupDir)) continue
    for (const name of readdirSync(groupDir)) {
      const dir = join(groupDir, name)
      const manifestPath = join(dir, 'package.json')
      if (!existsSync(manifestPath)) continue
      const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as {
        name: string
        exports?: Record<string, { source?: string } | string>
        dsh?: { providers?: string[]; testSupport?: boolean }
      }
      const exports = new Map<string, string>()
      for (const [key, value] of Object.entries(manifest.exports ?? {})) {
        const source = typeof value === 'string' ? value : value.source
        if (source) exports.set(key === '.' ? manifest.name : `${manifest.name}/${key.slice(2)}`, resolve(dir, source))
      }
      const providers = new Set((manifest.dsh?.providers ?? []).map((p) => resolve(dir, p)))
      out.push({ name: manifest.name, dir, providers, exports, testSupport: manifest.dsh?.testSupport === true })
    }
  }
  return out
}

export function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return /\.(ts|tsx|mts|js|mjs)$/.test(name) && !name.endsWith('.d.ts') ? [path] : []
  })
}

export const IMPORT =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s+['"]([^'"]+)['"]/gm

/** Every import of a provider module by a module that is not itself a provider. */
export function findViolations(root: string): Violation[] {
  const packages = readPackages(root)
  const providers = new Set(packages.flatMap((p) => [...p.providers]))
  const bySpecifier = new Map(packages.flatMap((p) => [...p.exports]))
  const testSupport = new Set(packages.filter((p) => p.testSupport).flatMap((p) => [...p.exports.values()]))
  const violations: Violation[] = []
  for (const pkg of packages) {
    if (pkg.testSupport) continue
    for (const file of sourceFiles(join(pkg.dir, 'src'))) {
      if (providers.has(file)) continue
      const text = readFileSync(file, 'utf8')
      for (const match of text.matchAll(IMPORT)) {
        const specifier = match[1] ?? match[2] ?? match[3]
        if (!specifier) continue
        const target = specifier.startsWith('.')
          ? resolve(dirname(file), specifier).replace(/\.js$/, '.ts')
          : bySpecifier.get(specifier)
        if (target && (providers.has(target) || testSupport.has(target))) {
          violations.push({ importer: relative(root, file), specifier, provider: relative(root, target) })
        }
      }
    }
  }
  return violations
}
