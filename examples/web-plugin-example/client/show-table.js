// The browser side of @dsh/web-plugin-example (a client module: see ClientApi in
// @dsh/surfaces/web/client-api). It draws `show_table` calls as tables and adds a settings section
// whose one option (striped rows) is kept in this browser's localStorage.
const STRIPED = 'dsh.web-plugin-example.striped'

export default function activate(dsh) {
  const { h } = dsh
  const { useState } = dsh.hooks

  dsh.registerToolRenderer('show_table', ({ call, result, status }) => {
    const { title, columns = [], rows = [] } = call.arguments
    const striped = localStorage.getItem(STRIPED) !== 'off'
    return h(
      'figure',
      { class: `example-table${striped ? ' striped' : ''}`, 'data-status': status },
      title ? h('figcaption', null, String(title)) : null,
      h(
        'table',
        null,
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            columns.map((column) => h('th', { scope: 'col' }, String(column))),
          ),
        ),
        h(
          'tbody',
          null,
          rows.map((row, index) =>
            h(
              'tr',
              { style: striped && index % 2 === 1 ? 'background: rgba(127, 127, 127, 0.14)' : undefined },
              columns.map((_, i) => h('td', null, String(row[i] ?? ''))),
            ),
          ),
        ),
      ),
      result?.isError ? h('pre', { class: 'result is-error' }, result.text) : null,
    )
  })

  dsh.registerSettingsSection({
    id: 'web-plugin-example',
    title: 'Tables (example plugin)',
    render: () => {
      const [striped, setStriped] = useState(localStorage.getItem(STRIPED) !== 'off')
      return h(
        'label',
        { class: 'example-setting' },
        h('input', {
          type: 'checkbox',
          checked: striped,
          onChange: (event) => {
            localStorage.setItem(STRIPED, event.currentTarget.checked ? 'on' : 'off')
            setStriped(event.currentTarget.checked)
          },
        }),
        ' Striped table rows',
      )
    },
  })
}
