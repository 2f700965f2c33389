// Which destinations a fetch may reach: public unicast addresses always; non-public ones (private,
// loopback, link-local, CGNAT, documentation, multicast, reserved, and their IPv4-mapped / NAT64 forms)
// only when an allowlist entry names the host or covers the address.
import { BlockList, isIP } from 'node:net'
import { HarnessError } from '@dsh/kernel'

const NON_PUBLIC_V4: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
]

const NON_PUBLIC_V6: [string, number][] = [
  ['::', 128],
  ['::1', 128],
  ['::', 96], // IPv4-compatible (deprecated)
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
]

const blocked = new BlockList()
for (const [net, prefix] of NON_PUBLIC_V4) blocked.addSubnet(net, prefix, 'ipv4')
for (const [net, prefix] of NON_PUBLIC_V6) blocked.addSubnet(net, prefix, 'ipv6')

/** The IPv4 address embedded in an IPv4-mapped (`::ffff:a.b.c.d`) or NAT64 (`64:ff9b::/96`) address. */
function embeddedV4(address: string): string | undefined {
  const lower = address.toLowerCase()
  const match = /^(?:::ffff:(?:0:)?|64:ff9b::)(.+)$/.exec(lower)
  if (!match) return undefined
  const rest = match[1] as string
  if (isIP(rest) === 4) return rest
  const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(rest)
  if (!hex) return undefined
  const high = Number.parseInt(hex[1] as string, 16)
  const low = Number.parseInt(hex[2] as string, 16)
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`
}

/** True for a public unicast address. Not an IP at all: false. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 4) return !blocked.check(address, 'ipv4')
  if (family !== 6) return false
  const v4 = embeddedV4(address)
  if (v4 !== undefined) return isPublicAddress(v4)
  return !blocked.check(address, 'ipv6')
}

/** The allowlist of non-public destinations, compiled. */
export interface AddressPolicy {
  /** Whether a (non-public) `address` reached for `hostname` is allowlisted. */
  allows(hostname: string, address: string): boolean
  /** Throws `WEB_BLOCKED_ADDRESS` unless `address` is public or allowlisted for `hostname`. */
  check(url: string, hostname: string, address: string): void
}

/**
 * Compiles allowlist entries: host names (`intranet.example`, `*.corp.example`, case-insensitive),
 * IP addresses and CIDRs (`10.0.0.0/8`, `fd00::/8`). Throws `WEB_CONFIG_INVALID` for a bad entry.
 */
export function createAddressPolicy(entries: readonly string[] = []): AddressPolicy {
  const cidrs = new BlockList()
  const hosts: string[] = []
  const suffixes: string[] = []
  for (const entry of entries) {
    if (typeof entry !== 'string' || entry.trim() === '') {
      throw new HarnessError('WEB_CONFIG_INVALID', 'web allow entries must be host names, IPs or CIDRs', {
        entry: String(entry),
      })
    }
    const value = entry.trim().toLowerCase()
    const [net, prefix] = value.split('/') as [string, string | undefined]
    const family = isIP(net)
    if (family !== 0) {
      const bits = prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix)
      if (!Number.isInteger(bits) || bits < 0 || bits > (family === 4 ? 32 : 128)) {
        throw new HarnessError('WEB_CONFIG_INVALID', `web allow entry "${entry}" has a bad prefix length`, { entry })
      }
      cidrs.addSubnet(net, bits, family === 4 ? 'ipv4' : 'ipv6')
    } else if (value.startsWith('*.')) suffixes.push(value.slice(1))
    else if (/^[a-z0-9.-]+$/.test(value)) hosts.push(value)
    else throw new HarnessError('WEB_CONFIG_INVALID', `web allow entry "${entry}" is not a host, IP or CIDR`, { entry })
  }
  const allows = (hostname: string, address: string): boolean => {
    const host = hostname.toLowerCase().replace(/^\[|\]$/g, '')
    if (hosts.includes(host) || suffixes.some((suffix) => host.endsWith(suffix))) return true
    const family = isIP(address)
    if (family === 0) return false
    const v4 = family === 6 ? embeddedV4(address) : undefined
    if (v4 !== undefined && cidrs.check(v4, 'ipv4')) return true
    return cidrs.check(address, family === 4 ? 'ipv4' : 'ipv6')
  }
  return {
    allows,
    check(url, hostname, address) {
      if (isPublicAddress(address) || allows(hostname, address)) return
      throw new HarnessError(
        'WEB_BLOCKED_ADDRESS',
        `refusing ${url}: ${hostname} resolves to the non-public address ${address} (private, loopback, link-local or reserved networks need an explicit allow entry)`,
        { url, hostname, address },
      )
    },
  }
}
