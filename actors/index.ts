/**
 * The project's actor roles (EnvActor, TargetActor, EngineerSampler, Learner, Validator). Every
 * node imports this module so that it can host any of them. Roles land here as they are built.
 */
export {};
