/** The trainer sent back something no checkpoint may hold (a file name, a size). */
export class TrainerResultError extends Error {}
