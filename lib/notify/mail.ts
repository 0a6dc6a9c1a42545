import type { Transporter } from 'nodemailer';

/** An SMTP transport and the sender its messages go out as: notifications, and the links that prove addresses. */
export interface MailSender {
  transport: Pick<Transporter, 'sendMail'>;
  from: string;
}
