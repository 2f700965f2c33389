// The unary API of `dsh web`, derived from the wire table: each operation with a web route is served
// at its method and path; `:name` segments, the query (GET) and the JSON body (other methods) make
// its params, which the table's schema checks before the handler runs.

import type { HttpMethod, WebRoute } from '../wire/operation.js'
import { type OperationName, operations } from '../wire/operations.js'
import { checkParams, type JsonSchema } from '../wire/schema.js'

export interface WebRouteEntry extends WebRoute {
  name: OperationName
  /** The path split on `/`; a `:name` segment is a param. */
  segments: string[]
}

/** Every web route of the table, in table order. */
export const WEB_ROUTES: readonly WebRouteEntry[] = (Object.keys(operations) as OperationName[]).flatMap((name) => {
  const web = operations[name].web
  return 'path' in web ? [{ name, ...web, segments: web.path.split('/') }] : []
})

export interface RouteMatch {
  route: WebRouteEntry
  /** The decoded `:name` segments. */
  pathParams: Record<string, string>
}

/** The route of `method` + `pathname` (HEAD is GET), or undefined. */
export function matchRoute(method: string, pathname: string): RouteMatch | undefined {
  const wanted = (method === 'HEAD' ? 'GET' : method) as HttpMethod
  const parts = pathname.split('/')
  for (const route of WEB_ROUTES) {
    if (route.method !== wanted || route.segments.length !== parts.length) continue
    const pathParams: Record<string, string> = {}
    const fits = route.segments.every((segment, index) => {
      const part = parts[index] as string
      if (!segment.startsWith(':')) return segment === part
      if (!part) return false
      pathParams[segment.slice(1)] = safeDecode(part)
      return true
    })
    if (fits) return { route, pathParams }
  }
  return undefined
}

/**
 * The params of a matched call: the body (or, for GET, the query, with integer fields read as
 * numbers), then the path params. Checked against the table's schema; a refusal names the route.
 */
export function routeParams(match: RouteMatch, url: URL, body: Record<string, unknown>): Record<string, unknown> {
  const schema = operations[match.route.name].params as JsonSchema
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>
  const params: Record<string, unknown> = match.route.method === 'GET' ? {} : { ...body }
  if (match.route.method === 'GET') {
    for (const [key, value] of url.searchParams) {
      const type = properties[key]?.type
      params[key] = (type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value
    }
  }
  Object.assign(params, match.pathParams)
  try {
    checkParams(schema, params)
  } catch (error) {
    ;(error as Error).message += ` (${usage(match.route, properties)})`
    throw error
  }
  return params
}

/** How to call a route, for refusals: `GET /api/search?q=…&limit=…`, `POST /api/sessions/:sessionId/rename { "title" }`. */
function usage(route: WebRouteEntry, properties: Record<string, JsonSchema>): string {
  const own = Object.keys(properties).filter((key) => !route.segments.includes(`:${key}`))
  if (own.length === 0) return `${route.method} ${route.path}`
  if (route.method === 'GET') return `${route.method} ${route.path}?${own.map((key) => `${key}=…`).join('&')}`
  return `${route.method} ${route.path} { ${own.map((key) => JSON.stringify(key)).join(', ')} }`
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part)
  } catch {
    return part
  }
}
