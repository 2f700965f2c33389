// "Allow similar" on an approval card: allow this call and keep the narrowest rule covering it (the
// host's suggestion, shown verbatim) for this chat, in the user's settings or in the project's.
import { useState } from 'preact/hooks'

export type RuleScope = 'session' | 'user' | 'project'
export interface KeptRule {
  text: string
  scope: RuleScope
}

const SCOPES: Array<[RuleScope, string]> = [
  ['session', 'for this chat'],
  ['user', 'in my settings'],
  ['project', 'in this project'],
]

export function AllowSimilar(props: { rule: string; onAllow(rule: KeptRule): void }) {
  const [scope, setScope] = useState<RuleScope>('session')
  return (
    <span class="allow-similar">
      <button
        type="button"
        class="allow-rule"
        title={`Allow this call and every call ${props.rule} covers, kept ${SCOPES.find(([s]) => s === scope)?.[1]}`}
        onClick={() => props.onAllow({ text: props.rule, scope })}
      >
        Allow similar: <code>{props.rule}</code>
      </button>
      <select
        aria-label="keep the rule"
        value={scope}
        onChange={(event) => setScope((event.target as HTMLSelectElement).value as RuleScope)}
      >
        {SCOPES.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
    </span>
  )
}
