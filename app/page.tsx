import { redirect } from 'next/navigation';
import { getCurrentUser } from '@/lib/auth/session';

export const dynamic = 'force-dynamic';

export default async function HomePage() {
  redirect((await getCurrentUser()) ? '/tasks' : '/signin');
}
