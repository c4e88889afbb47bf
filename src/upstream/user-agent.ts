/**
 * The User-Agent of every request the gateway makes to a third party (image fetches, webhook deliveries):
 * SPEC "Message object" asks for a product token and version, a link and a contact address, so a receiver
 * can tell who is calling and how to reach its operator. Link and contact are the operator's (`media.*`).
 */
import type { MediaConfig } from '../config.js';

export function outboundUserAgent(version: string, config: Pick<MediaConfig, 'user_agent_link' | 'user_agent_contact'>): string {
  return `Switchboard/${version} (+${config.user_agent_link}; ${config.user_agent_contact})`;
}
