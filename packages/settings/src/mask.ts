// Settings are shown to people (`dsh config list`, the web settings page); a URL setting may carry a
// password in its user-info (`session.store: postgres://user:password@host/db`, an endpoint's
// `http://user:password@host/v1`). What is shown keeps the user and the host and hides the password;
// the stored value is untouched.

const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s/:@]*):[^\s/@]*@/gi

/** `value` with the password of every URL inside it (strings in objects and arrays too) as `***`. */
export function maskUrlPasswords<T>(value: T): T {
  if (typeof value === 'string') return value.replace(URL_PASSWORD, '$1:***@') as T
  if (Array.isArray(value)) return value.map((item) => maskUrlPasswords(item)) as T
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, maskUrlPasswords(item)])) as T
  }
  return value
}
