'use server';

import { registerUser } from '@/lib/auth/accounts';
import { getEnv } from '@/lib/env';

export type SignUpState = { ok: boolean; errors: Partial<Record<'email' | 'password' | 'name' | 'form', string>> };

export async function signUpAction(_previous: SignUpState, form: FormData): Promise<SignUpState> {
  if (!getEnv().allowSignup) return { ok: false, errors: { form: 'Sign-up is closed on this server. Ask its operator for an account.' } };
  const result = await registerUser({ email: form.get('email'), password: form.get('password'), name: form.get('name') });
  if (!result.ok) return { ok: false, errors: { [result.field]: result.message } };
  return { ok: true, errors: {} };
}
