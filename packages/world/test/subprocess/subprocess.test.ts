import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { Context, HarnessError } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import { checkSpawnSpec, type SpawnSpec, scrubEnv } from '../../src/subprocess/index.js'
import LocalSubprocess, { groupMembers, type LocalSubprocessConfig } from '../../src/subprocess/local.js'

async function setup(config: LocalSubprocessConfig = {}) {
  const root = new Context()
  const fiber = root.plugin(LocalSubprocess, config)
  await fiber
  return Object.assign(root, { provider: fiber })
}

function spec(script: string, extra: Partial<SpawnSpec> = {}): SpawnSpec {
  return {
    argv: ['bash', '-c', script],
    cwd: process.cwd(),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
    graceMs: 200,
    output: { headBytes: 4096, tailBytes: 4096 },
    ...extra,
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0]
    return state !== 'Z'
  } catch {
    return false
  }
}

describe('ctx.subprocess (local)', () => {
  it('runs argv without a shell and reports exit code and combined output', async () => {
    const root = await setup()
    const handle = await root.subprocess.spawn(spec('echo out; echo err >&2; exit 3'))
    const exit = await handle.done
    expect(exit).toMatchObject({ exitCode: 3, signal: null, terminated: false, survivors: 0 })
    expect(exit.output.text).toBe('out\nerr\n')
    expect(exit.output.truncated).toBe(false)
  })

  it('feeds stdin text and closes it', async () => {
    const root = await setup()
    const handle = await root.subprocess.spawn({
      ...spec(''),
      argv: ['cat'],
      stdio: { stdin: { text: 'hi\n' }, stdout: 'pipe', stderr: 'pipe' },
    })
    expect((await handle.done).output.text).toBe('hi\n')
  })

  it('kills a whole tree, including a grandchild that ignores SIGTERM, and waits until it is gone', async () => {
    // Plain process groups: a PID namespace ends the tree as soon as its main process exits.
    const root = await setup({ contain: 'none' })
    // The grandchild traps TERM and prints its pid; its parent waits on it.
    const handle = await root.subprocess.spawn(
      spec(`bash -c 'trap "" TERM; echo grandchild $$; while :; do sleep 0.05; done' & wait`, { graceMs: 150 }),
    )
    let text = ''
    await new Promise<void>((resolve) => {
      handle.onOutput((chunk) => {
        text += chunk
        if (/grandchild \d+/.test(text)) resolve()
      })
    })
    const grandchild = Number(/grandchild (\d+)/.exec(text)?.[1])
    expect(alive(grandchild)).toBe(true)
    const started = Date.now()
    const [first, second] = [handle.terminate('test'), handle.terminate('again')]
    expect(first).toBe(second)
    const exit = await first
    expect(Date.now() - started).toBeGreaterThanOrEqual(140)
    expect(exit.terminated).toBe(true)
    expect(exit.survivors).toBe(0)
    expect(alive(grandchild)).toBe(false)
    expect(alive(handle.pid)).toBe(false)
    expect(groupMembers(handle.pid)).toBe(0)
    expect(await handle.terminate()).toBe(exit)
  })

  it('terminates on the caller signal and when the owning plugin is disposed', async () => {
    const root = await setup()
    const controller = new AbortController()
    const a = await root.subprocess.spawn(spec('sleep 30', { signal: controller.signal }))
    controller.abort()
    expect((await a.done).terminated).toBe(true)

    const fiber = root.plugin({
      inject: ['subprocess'],
      apply(ctx: Context) {
        void ctx.subprocess.spawn(spec('sleep 30 & sleep 30 & wait')).then((handle) => {
          pids.push(handle.pid)
        })
      },
    })
    const pids: number[] = []
    while (pids.length === 0) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(root.subprocess.live()).toHaveLength(1)
    await fiber.dispose()
    expect(groupMembers(pids[0] as number)).toBe(0)
    expect(root.subprocess.live()).toHaveLength(0)
  })

  it('reaps background leftovers when the leader exits', async () => {
    const root = await setup()
    const handle = await root.subprocess.spawn(spec('sleep 30 & echo started'))
    const exit = await handle.done
    expect(exit.exitCode).toBe(0)
    expect(exit.output.text).toBe('started\n')
    expect(groupMembers(handle.pid)).toBe(0)
  })

  it('bounds output to head and tail and spills the complete output to a private file', async () => {
    const root = await setup()
    const handle = await root.subprocess.spawn(
      spec('for i in $(seq 1 2000); do echo line-$i; done', { output: { headBytes: 64, tailBytes: 64 } }),
    )
    const exit = await handle.done
    expect(exit.output.truncated).toBe(true)
    expect(exit.output.text.startsWith('line-1\nline-2\n')).toBe(true)
    expect(exit.output.text.endsWith('line-2000\n')).toBe(true)
    expect(exit.output.text).toMatch(/\[\.\.\. \d+ bytes omitted \(complete output: .+\) \.\.\.\]/)
    const spill = exit.output.spillPath as string
    const full = readFileSync(spill, 'utf8')
    expect(full.split('\n')).toHaveLength(2001)
    expect(exit.output.totalBytes).toBe(Buffer.byteLength(full))
    expect(handle.read(0, 14)).toEqual({ text: 'line-1\nline-2\n', next: 14, lost: 0 })
    await root.provider.dispose()
    expect(existsSync(spill)).toBe(false)
  })

  it('scrubs secret-looking and DSH_ variables unless the caller trusts them', async () => {
    const root = await setup()
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: '/h',
      API_KEY: 'k',
      GH_TOKEN: 't',
      DB_PASSWORD: 'p',
      DSH_HOME: '/d',
      DSH_SESSION_ID: 's',
    }
    expect(scrubEnv(env, ['DSH_SESSION_ID'])).toEqual({ PATH: env.PATH, HOME: '/h', DSH_SESSION_ID: 's' })
    const handle = await root.subprocess.spawn({ ...spec('env | sort'), env, trustedEnv: ['DSH_SESSION_ID'] })
    const text = (await handle.done).output.text
    expect(text).toContain('HOME=/h')
    expect(text).toContain('DSH_SESSION_ID=s')
    expect(text).not.toMatch(/API_KEY|GH_TOKEN|DB_PASSWORD|DSH_HOME/)
  })

  it.skipIf(process.platform !== 'linux')(
    'a cancelled command takes its setsid grandchild along (PID namespace containment)',
    async () => {
      const root = await setup()
      if ((await root.subprocess.containment()).mechanism !== 'pid-namespace') return
      const token = `setsid-${process.pid}-${Date.now()}`
      // Expanded at run time: only the grandchild's command line holds `<token>-gc`.
      const handle = await root.subprocess.spawn(
        spec(`T=${token}; setsid bash -c 'while :; do sleep 0.1; done' "$T"-gc & echo started; sleep 100`),
      )
      await new Promise<void>((resolve) => handle.onOutput(() => resolve()))
      const grandchild = () =>
        readdirSync('/proc').filter((entry) => {
          try {
            return /^\d+$/.test(entry) && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(`${token}-gc`)
          } catch {
            return false
          }
        })
      // Up to 10 s: on a loaded machine the grandchild bash can take seconds to start.
      for (let i = 0; i < 500 && grandchild().length === 0; i++) await new Promise((r) => setTimeout(r, 20))
      const [pid] = grandchild()
      expect(pid).toBeDefined()
      await handle.terminate('cancelled')
      for (let i = 0; i < 100 && alive(Number(pid)); i++) await new Promise((r) => setTimeout(r, 20))
      expect(alive(Number(pid))).toBe(false)
    },
  )

  it('rejects incomplete specs and failed spawns with stable codes', async () => {
    const root = await setup()
    expect(() => checkSpawnSpec({ argv: [] } as unknown as SpawnSpec)).toThrow(/argv.*cwd.*env/)
    await expect(root.subprocess.spawn({ ...spec(''), argv: ['/nonexistent/x'] })).rejects.toSatisfy((error) =>
      HarnessError.is(error, 'SUBPROCESS_SPAWN_FAILED'),
    )
    await expect(root.subprocess.spawn({ ...spec(''), graceMs: -1 })).rejects.toSatisfy((error) =>
      HarnessError.is(error, 'SUBPROCESS_SPEC_INVALID'),
    )
  })
})
