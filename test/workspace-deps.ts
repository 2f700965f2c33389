// Every `@dsh/*` package a workspace's source imports (types included) must be a declared dependency
// and a tsconfig project reference: `tsc -b` orders the build by references only, so a missing one
// passes in a tree that was built before and fails on a fresh clone.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'

export interface DepViolation {
  workspace: string
  imports: string
  missing: 'dependency' | 'reference'
}

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.tsx?$/.test(entry.name) ? [path] : []
  })
}

export function findDepViolations(root: string): DepViolation[] {
  const violations: DepViolation[] = []
  for (const group of ['packages', 'apps', 'examples']) {
    if (!existsSync(join(root, group))) continue
    for (const name of readdirSync(join(root, group)).sort()) {
      const dir = join(root, group, name)
      const manifestFile = join(dir, 'package.json')
      const tsconfigFile = join(dir, 'tsconfig.json')
      if (!existsSync(manifestFile) || !existsSync(tsconfigFile)) continue
      const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'))
      const tsconfig = JSON.parse(readFileSync(tsconfigFile, 'utf8'))
      const declared = new Set(
        Object.keys({ ...manifest.dependencies, ...manifest.devDependencies, ...manifest.peerDependencies }),
      )
      // A config without references is outside the `tsc -b` graph (the browser client builds with Vite).
      const references = tsconfig.references as Array<{ path: string }> | undefined
      const referenced = new Set((references ?? []).map((reference) => basename(reference.path)))
      const imported = new Set<string>()
      for (const file of sourceFiles(join(dir, 'src'))) {
        for (const match of readFileSync(file, 'utf8').matchAll(/from '(@dsh\/[\w-]+)/g))
          imported.add(match[1] as string)
      }
      for (const target of [...imported].sort()) {
        if (target === manifest.name) continue
        const where = `${group}/${name}`
        if (!declared.has(target)) violations.push({ workspace: where, imports: target, missing: 'dependency' })
        const folder = target.slice('@dsh/'.length)
        if (references && !referenced.has(folder))
          violations.push({ workspace: where, imports: target, missing: 'reference' })
      }
    }
  }
  return violations
}
