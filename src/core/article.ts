/**
 * "a" or "an" before a word the message does not know in advance (an endpoint kind, a content part type):
 * by its first letter, which is right for every identifier the gateway names (`embedding`, `image_url`,
 * `input_audio`, `rerank`); `u` takes "a", as in `user`.
 */
export function withArticle(word: string): string {
  return `${/^[aeio]/i.test(word) ? 'an' : 'a'} ${word}`;
}
