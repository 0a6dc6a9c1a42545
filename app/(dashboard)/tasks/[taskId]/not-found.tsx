import Link from 'next/link';
import { buttonClass } from '@/components/ui/button';

export default function TaskNotFound() {
  return (
    <div className="mx-auto max-w-md py-12 text-center">
      <h1 className="text-xl font-semibold">Task not found</h1>
      <p className="mt-2 text-sm text-zinc-600 dark:text-zinc-400">
        There is no task with this id among yours. It may have expired and been deleted, or the link may be mistyped.
      </p>
      <Link href="/tasks" className={`${buttonClass('secondary')} mt-6`}>
        Back to tasks
      </Link>
    </div>
  );
}
